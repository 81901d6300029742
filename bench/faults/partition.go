package faults

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/lockbench/lockbench/loadgen"
	"github.com/lockbench/lockbench/strategies"
)

// Partition defaults.
const (
	// DefaultPartitionFor is how long partition lasts: 3 seconds.
	DefaultPartitionFor = 3 * time.Second
	// DefaultDelay is what mode=delay adds to every reply: 200ms.
	DefaultDelay = 200 * time.Millisecond
)

func init() {
	register(Kind{
		Name: "partition",
		Description: "route the instances' traffic to one server through a TCP proxy (toxiproxy, in process) and cut it off " +
			"(every byte dropped both ways) or delay it for a while; works with given servers too",
		Params:    "node=N (default 0), mode=cut|delay (default cut), delay=D (default 200ms, per reply), for=D (default 3s), at=SHARE (default 0.3)",
		AppliesTo: hasServer,
		New: func(p map[string]string) (loadgen.Fault, error) {
			ps := newParams("partition", p)
			f := &partition{
				index: ps.index("node", 0),
				mode:  ps.choice("mode", "cut", "delay"),
				delay: ps.duration("delay", DefaultDelay),
				dur:   ps.duration("for", DefaultPartitionFor),
				at:    ps.share("at", DefaultAt),
			}
			return f, ps.done()
		},
	})
}

// partition cuts off or delays the traffic to one server.
type partition struct {
	index int
	mode  string
	delay time.Duration
	dur   time.Duration
	at    float64

	name  string // the server, for events
	proxy *proxy
}

func (f *partition) Name() string { return "partition" }

// Setup puts a proxy in front of the server and points the lock config at it.
func (f *partition) Setup(_ context.Context, env *loadgen.FaultEnv) error {
	lock := &env.Lock
	switch env.Info.Backend {
	case strategies.BackendRedis:
		if n := redisNodes(env); f.index >= n {
			return fmt.Errorf("partition: node=%d but %s uses %d Redis node(s) (0..%d)", f.index, env.Strategy, n, n-1)
		}
		// Copy before changing: the slice is the session's.
		lock.RedisAddrs = append([]string(nil), lock.RedisAddrs...)
		addr := lock.RedisAddrs[f.index]
		p, err := newProxy("redis", addr)
		if err != nil {
			return err
		}
		f.proxy, f.name = p, fmt.Sprintf("redis-%d (%s)", f.index, addr)
		lock.RedisAddrs[f.index] = p.Addr()
	case strategies.BackendEtcd:
		if f.index >= len(lock.EtcdEndpoints) {
			return fmt.Errorf("partition: node=%d but there are %d etcd endpoint(s)", f.index, len(lock.EtcdEndpoints))
		}
		lock.EtcdEndpoints = append([]string(nil), lock.EtcdEndpoints...)
		ep := lock.EtcdEndpoints[f.index]
		routed, err := f.route(ep, func(addr string) (string, error) { return replaceURLHost(ep, addr) }, hostOfURL)
		if err != nil {
			return err
		}
		f.name = fmt.Sprintf("etcd endpoint %d (%s)", f.index, ep)
		lock.EtcdEndpoints[f.index] = routed
	case strategies.BackendPostgres:
		if f.index != 0 {
			return fmt.Errorf("partition: node=%d but there is one Postgres server (node 0)", f.index)
		}
		dsn := lock.PostgresDSN
		routed, err := f.route(dsn, func(addr string) (string, error) { return replaceDSNHost(dsn, addr) }, hostOfDSN)
		if err != nil {
			return err
		}
		f.name = "postgres"
		lock.PostgresDSN = routed
	default:
		return fmt.Errorf("partition: %s has no server", env.Strategy)
	}
	return nil
}

// route starts a proxy to the host:port that hostOf finds in endpoint and
// returns endpoint rewritten to the proxy by rewrite.
func (f *partition) route(endpoint string, rewrite func(string) (string, error), hostOf func(string) (string, error)) (string, error) {
	upstream, err := hostOf(endpoint)
	if err != nil {
		return "", fmt.Errorf("partition: %w", err)
	}
	p, err := newProxy("partition", upstream)
	if err != nil {
		return "", err
	}
	routed, err := rewrite(p.Addr())
	if err != nil {
		p.close()
		return "", fmt.Errorf("partition: %w", err)
	}
	f.proxy = p
	return routed, nil
}

// Inject cuts or delays the traffic at cfg.at for cfg.dur, then heals it.
func (f *partition) Inject(ctx context.Context, env *loadgen.FaultEnv) error {
	if env.WaitOffered(ctx, f.at) != nil {
		return nil
	}
	what := f.name + " cut off (every byte dropped both ways)"
	err := f.proxy.cut()
	if f.mode == "delay" {
		what = fmt.Sprintf("%s delayed by %s per reply", f.name, ms(f.delay))
		err = f.proxy.delay(f.delay)
	}
	if err != nil {
		return errors.Join(err, f.proxy.heal())
	}
	env.Begin(what)
	sleep(ctx, f.dur)
	if err := f.proxy.heal(); err != nil {
		return err
	}
	env.End(f.name + " reachable again")
	return nil
}

// Close stops the proxy: the run is over, nobody uses the rerouted config.
func (f *partition) Close() error {
	if f.proxy == nil {
		return nil
	}
	err := f.proxy.heal()
	f.proxy.close()
	return err
}

// hostOfURL returns the host:port of an etcd endpoint (a URL, or a bare
// host:port).
func hostOfURL(ep string) (string, error) {
	if !strings.Contains(ep, "://") {
		if _, _, err := net.SplitHostPort(ep); err != nil {
			return "", fmt.Errorf("etcd endpoint %q is neither a URL nor host:port", ep)
		}
		return ep, nil
	}
	u, err := url.Parse(ep)
	if err != nil || u.Port() == "" {
		return "", fmt.Errorf("etcd endpoint %q has no host:port", ep)
	}
	return u.Host, nil
}

func replaceURLHost(ep, addr string) (string, error) {
	if !strings.Contains(ep, "://") {
		return addr, nil
	}
	u, err := url.Parse(ep)
	if err != nil {
		return "", err
	}
	u.Host = addr
	return u.String(), nil
}

// hostOfDSN returns the host:port of a Postgres DSN (URL or keyword/value
// form). Errors never quote the DSN: it may hold a password.
func hostOfDSN(dsn string) (string, error) {
	cfg, err := pgconn.ParseConfig(dsn)
	if err != nil {
		return "", errors.New("the Postgres DSN cannot be parsed (not shown: it may hold a password)")
	}
	if strings.HasPrefix(cfg.Host, "/") || len(cfg.Fallbacks) > 0 {
		return "", errors.New("the Postgres DSN names a Unix socket or several hosts; partition needs one TCP host:port")
	}
	return net.JoinHostPort(cfg.Host, fmt.Sprint(cfg.Port)), nil
}

// replaceDSNHost points dsn at addr. In keyword/value form a later keyword
// overrides an earlier one, so appending is enough.
func replaceDSNHost(dsn, addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", err
	}
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			return "", errors.New("the Postgres DSN cannot be parsed (not shown: it may hold a password)")
		}
		u.Host = addr
		return u.String(), nil
	}
	return fmt.Sprintf("%s host=%s port=%s", dsn, host, port), nil
}
