package servers

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/lockbench/lockbench/strategies"
)

// Topology is how the Redis lockbench starts is laid out.
type Topology string

// The Redis topologies.
const (
	// TopologyMasters is independent masters, as many as the strategies
	// need (five for redlock): the default.
	TopologyMasters Topology = "masters"
	// TopologySentinel is one primary with SentinelReplicas replicas
	// (asynchronous replication) watched by SentinelCount Sentinels, as
	// most teams run Redis: single-node strategies find the primary
	// through the Sentinels, multi-node ones have no independent masters.
	TopologySentinel Topology = "sentinel"
)

// ParseTopology parses a --redis-topology value: masters or sentinel
// ("" is masters).
func ParseTopology(s string) (Topology, error) {
	switch Topology(s) {
	case "", TopologyMasters:
		return TopologyMasters, nil
	case TopologySentinel:
		return TopologySentinel, nil
	}
	return "", fmt.Errorf("want masters or sentinel, got %q", s)
}

// The sentinel topology, tuned to fail over fast.
const (
	// SentinelReplicas is the number of replicas of the primary: 2.
	SentinelReplicas = 2
	// SentinelCount is the number of Sentinels: 3.
	SentinelCount = 3
	// SentinelQuorum is how many Sentinels must agree that the primary is
	// down: 2.
	SentinelQuorum = 2
	// SentinelDownAfter is the Sentinels' down-after-milliseconds: 1s
	// without a valid reply and a Sentinel deems the primary down (Redis'
	// default is 30s). A Sentinel pings every second or every
	// down-after, whichever is shorter; at 500ms a new primary that was
	// slow to answer its first pings on a busy machine was sometimes
	// deemed down right after its promotion, and failed over again.
	SentinelDownAfter = time.Second
	// SentinelFailoverTimeout is the Sentinels' failover-timeout: 6s. It
	// also sets how long a Sentinel lets a replica replicate from an
	// address other than the primary's before it re-points it
	// (+fix-slave-config): the failover fault routes replication through
	// proxies for a few seconds, and this keeps the Sentinels from undoing
	// that while it lasts. A failover that did not get going (a split
	// vote, or no replica to promote) is tried again after twice this.
	SentinelFailoverTimeout = 6 * time.Second
	// SentinelParallelSyncs is how many replicas resynchronise with a new
	// primary at once: 1.
	SentinelParallelSyncs = 1

	// sentinelReadyTimeout bounds the wait for every Sentinel to know the
	// replicas and the other Sentinels (they meet through hello messages
	// on the primary, every 2s): 30s.
	sentinelReadyTimeout = 30 * time.Second
	// sentinelAskTimeout bounds one question to a Sentinel: 1s.
	sentinelAskTimeout = time.Second
	// primaryAskTimeout bounds how long a starting data node waits for a
	// majority of the Sentinels to name one primary: 5s.
	primaryAskTimeout = 5 * time.Second
	// settleTimeout bounds Roles' wait for a settled group: 15s.
	settleTimeout = 15 * time.Second
)

// ErrNeedsMasters is wrapped by TargetFor's error for a strategy that needs
// several independent Redis masters (redlock) when the Redis given or
// started is one primary behind Sentinels: its replicas are copies, not
// independent nodes.
var ErrNeedsMasters = errors.New("servers: needs independent Redis masters; the sentinel topology has one primary and its replicas")

// ErrReplicated is wrapped by Target.Reroute for a replicated Redis: its
// clients find the primary through the Sentinels, so a proxy in front of
// one node's address would not be used.
var ErrReplicated = errors.New("servers: the primary of a replicated Redis is found through its Sentinels; its clients cannot be rerouted through a proxy")

// sentinelState is the implementation part of Sentinel.
type sentinelState struct {
	server
	port    int
	dir     string
	cfgPath string
	secure  *Secure // Options.Secure
}

// sentinelGroup is the replicated Redis of the sentinel topology: the data
// nodes (a primary and its replicas) and the Sentinels that watch them.
type sentinelGroup struct {
	master    string  // the name the Sentinels know the primary by
	secure    *Secure // Options.Secure: TLS and logins everywhere
	nodes     []*Redis
	sentinels []*Sentinel

	mu          sync.Mutex
	lastPrimary string // the primary's address when last asked
}

// startSentinelGroup starts the sentinel topology: redis-0 as the primary,
// redis-1 and redis-2 replicating from it, then the Sentinels, and waits
// until every replica is in sync and every Sentinel knows both replicas and
// the other Sentinels (before that a failover could not get a quorum).
func (c *Cluster) startSentinelGroup(ctx context.Context, bins binaries) error {
	var err error
	for range startAttempts {
		if err = c.startSentinelGroupOnce(ctx, bins); !addrInUse(err) {
			break
		}
	}
	return err
}

func (c *Cluster) startSentinelGroupOnce(ctx context.Context, bins binaries) error {
	n := 1 + SentinelReplicas
	ports, err := freePorts(n + SentinelCount)
	if err != nil {
		return err
	}
	g := &sentinelGroup{master: strategies.DefaultRedisMaster, secure: c.opts.Secure}
	fail := func(err error) error {
		for _, s := range c.groupServers(g) {
			_ = s.kill()
		}
		c.Redis, c.Sentinels = nil, nil
		return err
	}
	for i := range n {
		name := fmt.Sprintf("redis-%d", i)
		_ = os.RemoveAll(filepath.Join(c.dir, name)) // a failed attempt's leftovers
		r, err := c.newRedis(name, bins, g)
		if err != nil {
			return fail(err)
		}
		r.port, r.Addr = ports[i], net.JoinHostPort(r.host, strconv.Itoa(ports[i]))
		g.nodes = append(g.nodes, r)
	}
	g.lastPrimary = g.nodes[0].Addr
	c.Redis = g.nodes
	// The primary first: the replicas start replicating from it at once.
	for _, r := range g.nodes {
		if err := r.start(ctx); err != nil {
			return fail(err)
		}
	}
	for i := range SentinelCount {
		s, err := c.newSentinel(fmt.Sprintf("sentinel-%d", i), ports[n+i], g, bins)
		if err != nil {
			return fail(err)
		}
		g.sentinels = append(g.sentinels, s)
	}
	c.Sentinels = g.sentinels
	for _, s := range g.sentinels {
		if err := s.start(ctx); err != nil {
			return fail(err)
		}
	}
	if err := g.waitFormed(ctx); err != nil {
		return fail(&StartError{Server: "the sentinel topology", Err: err, LogTail: logTail(g.sentinels[0].logPath)})
	}
	return nil
}

// groupServers lists the group's servers created so far.
func (c *Cluster) groupServers(g *sentinelGroup) []*server {
	var all []*server
	for _, r := range g.nodes {
		all = append(all, &r.server)
	}
	for _, s := range g.sentinels {
		all = append(all, &s.server)
	}
	return all
}

// newSentinel writes a Sentinel's configuration and prepares its server.
// Sentinel rewrites its configuration file as it learns (replicas, other
// Sentinels, a new primary), so a restarted Sentinel knows what it knew.
func (c *Cluster) newSentinel(name string, port int, g *sentinelGroup, bins binaries) (*Sentinel, error) {
	s := &Sentinel{Addr: net.JoinHostPort(c.host(), strconv.Itoa(port))}
	s.port, s.secure = port, g.secure
	s.dir = filepath.Join(c.dir, name)
	s.cfgPath = filepath.Join(s.dir, "sentinel.conf")
	_ = os.RemoveAll(s.dir)
	if err := os.Mkdir(s.dir, 0o755); err != nil {
		return nil, fmt.Errorf("servers: %w", err)
	}
	if err := os.WriteFile(s.cfgPath, []byte(g.sentinelConfig(port, s.dir)), 0o600); err != nil {
		return nil, fmt.Errorf("servers: %s: %w", name, err)
	}
	s.server = server{
		name:    name,
		logPath: filepath.Join(s.dir, "server.log"),
		stopSig: syscall.SIGTERM,
		timeout: redisReadyTimeout,
		build: func() (*exec.Cmd, error) {
			cmd := exec.Command(bins.redisServer, s.cfgPath, "--sentinel")
			cmd.Dir, cmd.Env = s.dir, childEnv()
			return cmd, nil
		},
		ready: func(ctx context.Context) error { return pingAs(ctx, s.Addr, g.secure) },
		desc:  func() string { return name + " (" + s.Addr + ")" },
		cl:    &c.state,
	}
	return s, nil
}

// sentinelConfig is a Sentinel's sentinel.conf.
func (g *sentinelGroup) sentinelConfig(port int, dir string) string {
	host, primaryPort, _ := net.SplitHostPort(g.nodes[0].Addr)
	ms := func(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }
	listen := []string{"port " + strconv.Itoa(port)}
	if sec := g.secure; sec.tls() {
		// TLS only, to clients, other Sentinels and the data nodes.
		listen = []string{"port 0", "tls-port " + strconv.Itoa(port),
			"tls-cert-file " + sec.Certs.ServerCert, "tls-key-file " + sec.Certs.ServerKey,
			"tls-ca-cert-file " + sec.Certs.CA, "tls-auth-clients no", "tls-replication yes"}
	}
	lines := append(listen,
		"bind "+host,
		// The nodes' host is loopback or private (CheckHost).
		"protected-mode no",
		"daemonize no",
		"dir "+dir,
		`logfile ""`,
		fmt.Sprintf("sentinel monitor %s %s %s %d", g.master, host, primaryPort, SentinelQuorum),
		fmt.Sprintf("sentinel down-after-milliseconds %s %s", g.master, ms(SentinelDownAfter)),
		fmt.Sprintf("sentinel failover-timeout %s %s", g.master, ms(SentinelFailoverTimeout)),
		fmt.Sprintf("sentinel parallel-syncs %s %d", g.master, SentinelParallelSyncs),
	)
	if sec := g.secure; sec.auth() {
		// The Sentinel's own users, and the logins it uses with the data
		// nodes and with the other Sentinels: Secure's user everywhere.
		u, pw := sec.user(), sec.Password
		lines = append(lines, "user default off", "user "+u+" on >"+pw+" ~* &* +@all",
			fmt.Sprintf("sentinel auth-user %s %s", g.master, u),
			fmt.Sprintf("sentinel auth-pass %s %s", g.master, pw),
			"sentinel sentinel-user "+u, "sentinel sentinel-pass "+pw)
	}
	return strings.Join(lines, "\n") + "\n"
}

// replicationArgs are the redis-server arguments of data node r: diskless
// replication both ways (a full resync streams the data set over the
// socket, with no delay to wait for more replicas, and a replica loads it
// without a file), so that a replica, or a restarted node, is in sync in
// milliseconds; and --replicaof the primary when that is not r.
func (g *sentinelGroup) replicationArgs(r *Redis) []string {
	args := []string{
		"--repl-diskless-sync", "yes",
		"--repl-diskless-sync-delay", "0",
		"--repl-diskless-load", "on-empty-db",
	}
	if g.secure.tls() {
		args = append(args, "--tls-replication", "yes")
	}
	if g.secure.auth() {
		args = append(args, "--masteruser", g.secure.user(), "--masterauth", g.secure.Password)
	}
	primary := g.primaryForStart()
	if primary != "" && primary != r.Addr {
		host, port, _ := net.SplitHostPort(primary)
		args = append(args, "--replicaof", host, port)
	}
	return args
}

// sentinelEndpoints are the group's Sentinel addresses and master name, or
// nothing for the masters topology.
func (c *Cluster) sentinelEndpoints() (sentinels []string, master string) {
	if len(c.Sentinels) == 0 {
		return nil, ""
	}
	for _, s := range c.Sentinels {
		sentinels = append(sentinels, s.Addr)
	}
	return sentinels, c.Redis[0].group.master
}

// replicatedTarget answers a single-node Redis need with the replicated
// Redis behind ep.RedisSentinels: the Sentinels and master name in the lock
// config, and, when they are the cluster's own, the group's nodes (in
// Nodes and, for faults to address them by index, RedisAddrs).
func replicatedTarget(need strategies.Need, ep Endpoints, c *Cluster) Target {
	t := Target{Need: need, noun: "Redis node", flag: "--redis-sentinels", env: EnvRedisSentinels}
	t.Config = ep.withCredentials(strategies.Config{
		RedisSentinels: append([]string(nil), ep.RedisSentinels...),
		RedisMaster:    ep.RedisMaster,
	})
	if t.Config.RedisMaster == "" {
		t.Config.RedisMaster = strategies.DefaultRedisMaster
	}
	if c == nil {
		return t
	}
	if own, _ := c.sentinelEndpoints(); len(own) > 0 && slices.Equal(own, ep.RedisSentinels) {
		t.group = c.Redis[0].group
		for _, r := range c.Redis {
			t.Nodes = append(t.Nodes, r)
			t.Config.RedisAddrs = append(t.Config.RedisAddrs, r.Addr)
		}
	}
	return t
}

// URL is how a client names the Sentinel: Addr for a plain one, and with
// Options.Secure a rediss:// (TLS) or redis:// URL with the user and
// password, as a Config.RedisSentinels entry.
func (s *Sentinel) URL() string { return s.secure.redisURL(s.Addr) }

// Kill SIGKILLs the Sentinel and waits until it has exited.
func (s *Sentinel) Kill() error { return s.kill() }

// Start starts the Sentinel again with the configuration it rewrote as it
// learnt (the current primary, the replicas, the other Sentinels) and
// waits until it answers PING.
func (s *Sentinel) Start(ctx context.Context) error { return s.start(ctx) }
