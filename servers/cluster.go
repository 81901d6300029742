package servers

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"sync"
)

// state is the part of a Cluster shared by all its servers.
type state struct {
	dir  string
	opts Options

	// stopCtx is cancelled when Stop begins, so that a fault method waiting
	// for a server to come up gives up the server's lock to Stop at once.
	stopCtx  context.Context
	cancel   context.CancelFunc
	stopOnce sync.Once
	stopErr  error

	logMu sync.Mutex // serialises lines written to opts.Log

	// nats is the NATS server (Cluster.NATS); nil when none was started.
	nats *NATSServer
}

// logWriter returns where the named server's output is copied besides its
// log file: nil unless Options.Log is set.
func (s *state) logWriter(name string) io.Writer {
	if s.opts.Log == nil {
		return nil
	}
	return &prefixWriter{mu: &s.logMu, w: s.opts.Log, prefix: []byte(name + "| ")}
}

// Start starts the servers in needs on 127.0.0.1, on free ports, in one new
// temporary directory, and waits until each answers. On failure it stops
// whatever it started and returns an error naming what failed (a
// *StartError, with the tail of the server's log, for a server that did not
// come up). Missing binaries are installed when possible (see the package
// documentation).
func Start(ctx context.Context, needs Needs, opts Options) (*Cluster, error) {
	if needs.Redis < 0 {
		return nil, fmt.Errorf("servers: Needs.Redis is %d; want 0 or more", needs.Redis)
	}
	if opts.EtcdMembers == 0 {
		opts.EtcdMembers = DefaultEtcdMembers
	}
	if opts.EtcdMembers < 1 || opts.EtcdMembers > MaxEtcdMembers {
		return nil, fmt.Errorf("servers: Options.EtcdMembers is %d; want 1 to %d (1 or 3 usually)", opts.EtcdMembers, MaxEtcdMembers)
	}
	if opts.ZKMembers == 0 {
		opts.ZKMembers = DefaultZKMembers
	}
	if opts.Host != "" {
		if err := CheckHost(opts.Host); err != nil {
			return nil, err
		}
	}
	if opts.ZKMembers < 1 || opts.ZKMembers > MaxZKMembers {
		return nil, fmt.Errorf("servers: Options.ZKMembers is %d; want 1 to %d (1 or 3 usually)", opts.ZKMembers, MaxZKMembers)
	}
	if err := opts.pgReplicaErr(); err != nil {
		return nil, err
	}
	bins, err := findBinaries(ctx, needs, opts)
	if err != nil {
		return nil, err
	}
	dir, err := newTempDir("") // and removes those of crashed runs
	if err != nil {
		return nil, fmt.Errorf("servers: %w", err)
	}
	c := &Cluster{}
	c.dir, c.opts = dir, opts
	c.stopCtx, c.cancel = context.WithCancel(context.Background())

	// The kinds start concurrently (initdb, an etcd election and a JVM
	// start dominate); each goroutine writes only its own field of c.
	var wg sync.WaitGroup
	var redisErr, etcdErr, pgErr, zkErr, natsErr, mariaErr error
	if needs.Redis > 0 {
		wg.Go(func() { redisErr = c.startRedis(ctx, needs.Redis, bins) })
	}
	if needs.Etcd {
		wg.Go(func() { etcdErr = c.startEtcd(ctx, opts.EtcdMembers, bins) })
	}
	if needs.Postgres {
		wg.Go(func() { pgErr = c.startPostgres(ctx, bins) })
	}
	if needs.ZooKeeper {
		wg.Go(func() { zkErr = c.startZooKeeper(ctx, opts.ZKMembers, bins) })
	}
	if needs.NATS {
		wg.Go(func() { natsErr = c.startNATS(ctx) })
	}
	if needs.MySQL {
		wg.Go(func() { mariaErr = c.startMariaDB(ctx, bins) })
	}
	wg.Wait()
	if err := errors.Join(redisErr, etcdErr, pgErr, zkErr, natsErr, mariaErr); err != nil {
		return nil, errors.Join(err, c.Stop())
	}
	return c, nil
}

// Ensure starts the kinds of server in needs that existing does not name and
// returns existing merged with the endpoints of what it started, and the
// Cluster it started (nil when existing named everything needed). When
// existing names fewer Redis addresses than needs.Redis, Ensure starts
// nothing and returns an error wrapping ErrTooFewNodes.
func Ensure(ctx context.Context, needs Needs, existing Endpoints, opts Options) (Endpoints, *Cluster, error) {
	var start Needs
	if n := len(existing.RedisAddrs); needs.Redis > 0 {
		switch {
		case opts.RedisTopology == TopologySentinel:
			if len(existing.RedisSentinels) == 0 {
				start.Redis = needs.Redis // the replicated group, whatever the count
			}
		case n == 0:
			start.Redis = needs.Redis
		case n < needs.Redis:
			return existing, nil, fmt.Errorf("%w: %s names %d Redis node(s); this run needs %d (or unset it to let lockbench start them)",
				ErrTooFewNodes, EnvRedisAddrs, n, needs.Redis)
		}
	}
	start.Etcd = needs.Etcd && len(existing.EtcdEndpoints) == 0
	start.Postgres = needs.Postgres && existing.PostgresDSN == ""
	start.ZooKeeper = needs.ZooKeeper && len(existing.ZKServers) == 0
	start.NATS = needs.NATS && existing.NATSURL == ""
	start.MySQL = needs.MySQL && existing.MySQLDSN == ""
	if start == (Needs{}) {
		return existing, nil, nil
	}
	c, err := Start(ctx, start, opts)
	if err != nil {
		return existing, nil, err
	}
	ep, got := existing, c.Endpoints()
	switch {
	case start.Redis > 0 && opts.RedisTopology == TopologySentinel:
		ep.RedisSentinels, ep.RedisMaster, ep.RedisPassword = got.RedisSentinels, got.RedisMaster, got.RedisPassword
	case start.Redis > 0:
		ep.RedisAddrs, ep.RedisPassword = got.RedisAddrs, got.RedisPassword
	}
	if start.Etcd {
		ep.EtcdEndpoints = got.EtcdEndpoints
	}
	if start.Postgres {
		ep.PostgresDSN = got.PostgresDSN
	}
	if start.ZooKeeper {
		ep.ZKServers = got.ZKServers
	}
	if start.NATS {
		ep.NATSURL = got.NATSURL
	}
	if start.MySQL {
		ep.MySQLDSN = got.MySQLDSN
	}
	return ep, c, nil
}

// Endpoints returns where the cluster's servers listen. A nil Cluster has
// none.
func (c *Cluster) Endpoints() Endpoints {
	var ep Endpoints
	if c == nil {
		return ep
	}
	// A replicated group is reached through its Sentinels; its nodes are
	// not independent masters.
	if ep.RedisSentinels, ep.RedisMaster = c.sentinelEndpoints(); len(ep.RedisSentinels) == 0 {
		for _, r := range c.Redis {
			ep.RedisAddrs = append(ep.RedisAddrs, r.Addr)
		}
	}
	for _, m := range c.Etcd {
		ep.EtcdEndpoints = append(ep.EtcdEndpoints, m.ClientURL)
	}
	if c.Postgres != nil {
		ep.PostgresDSN = c.Postgres.DSN
		if c.PostgresStandby != nil {
			ep.PostgresDSN = multiHostDSN(c.Postgres, c.PostgresStandby)
		}
	}
	for _, m := range c.ZooKeeper {
		ep.ZKServers = append(ep.ZKServers, m.Addr)
	}
	if c.nats != nil {
		ep.NATSURL = c.nats.URL
	}
	if c.MariaDB != nil {
		ep.MySQLDSN = c.MariaDB.DSN
	}
	return ep
}

// Stop stops every server (the polite signal first: SIGTERM, or SIGINT for
// PostgreSQL's fast shutdown; SIGKILL after 5 s), waits for them to exit and
// removes the temporary directory. It is idempotent, safe to call
// concurrently with the fault methods (which return ErrStopped afterwards)
// and does nothing on a nil Cluster.
func (c *Cluster) Stop() error {
	if c == nil || c.cancel == nil {
		return nil
	}
	c.stopOnce.Do(func() {
		c.cancel()
		var wg sync.WaitGroup
		for _, s := range c.servers() {
			wg.Go(s.stop)
		}
		wg.Wait()
		if err := os.RemoveAll(c.dir); err != nil {
			c.stopErr = fmt.Errorf("servers: %w", err)
		}
	})
	return c.stopErr
}

// servers lists every server of the cluster.
func (c *Cluster) servers() []*server {
	var all []*server
	for _, r := range c.Redis {
		all = append(all, &r.server)
	}
	for _, s := range c.Sentinels {
		all = append(all, &s.server)
	}
	for _, m := range c.Etcd {
		all = append(all, &m.server)
	}
	if c.Postgres != nil {
		all = append(all, &c.Postgres.server)
	}
	if c.PostgresStandby != nil {
		all = append(all, &c.PostgresStandby.server)
	}
	for _, m := range c.ZooKeeper {
		all = append(all, &m.server)
	}
	if c.nats != nil {
		all = append(all, &c.nats.server)
	}
	if c.MariaDB != nil {
		all = append(all, &c.MariaDB.server)
	}
	return all
}

// freePorts returns n distinct ports that were free on 127.0.0.1 a moment
// ago. All listeners stay open until all ports are chosen, so the n differ.
func freePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("servers: find a free port: %w", err)
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

func hostPort(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }

// host is where the Redis nodes listen: Options.Host, or 127.0.0.1.
func (c *Cluster) host() string {
	if c.opts.Host != "" {
		return c.opts.Host
	}
	return "127.0.0.1"
}

// CheckHost says whether lockbench may start servers listening on host
// (Options.Host): a loopback or private address of this machine, never a
// public one, so that servers started for a benchmark are not exposed.
func CheckHost(host string) error {
	ip := net.ParseIP(host)
	if ip == nil {
		return fmt.Errorf("servers: host %q: want an IP address", host)
	}
	if !ip.IsLoopback() && !ip.IsPrivate() {
		return fmt.Errorf("servers: host %s is not a loopback or private address: lockbench starts no server on a public interface (give your own server endpoints)", host)
	}
	return nil
}
