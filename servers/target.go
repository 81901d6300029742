package servers

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lockbench/lockbench/strategies"
)

// Node is one server lockbench started that a fault or a test can stop and
// start again: a *Redis, an *EtcdMember, a *Postgres, a *ZKMember, a *NATSServer
// or a *MariaDB.
type Node interface {
	// Name names the node and its address for people: "redis-2 (127.0.0.1:6390)".
	Name() string
	// Kill stops the server abruptly (SIGKILL).
	Kill() error
	// Start starts it again at the same address and returns once it serves.
	Start(ctx context.Context) error
}

// Clock is implemented by nodes whose clock can be moved while they run
// (Redis nodes started with Options.Faketime).
type Clock interface {
	SetClockOffset(d time.Duration) error
}

// Volatile is implemented by nodes that come back empty after Kill and
// Start (Redis without persistence): what a restart does to the locks they
// held.
type Volatile interface {
	Volatile() bool
}

// Target is the servers one strategy uses, the answer to its Need.
type Target struct {
	// Need is what the strategy declared.
	Need strategies.Need
	// Config holds the endpoints of exactly those servers (a single-node
	// Redis lock gets one address, redlock five); TTL and Owner are unset.
	Config strategies.Config
	// Nodes are the servers behind Config's endpoints, in the same order,
	// when lockbench started them all; nil for a user's own servers.
	Nodes []Node
	// noun, flag and env name the backend for people and are set for a
	// target with a backend.
	noun, flag, env string
	// group is the replicated Redis lockbench started behind the target's
	// Sentinels; nil otherwise.
	group *sentinelGroup
	// pg is the Postgres primary and standby lockbench started behind
	// the target's DSN (--pg-topology replica); nil otherwise.
	pg *pgPair
}

// TargetFor answers need from the endpoints ep (which include those of c
// when the servers are lockbench's) and the cluster lockbench started (nil
// when it started none).
func TargetFor(need strategies.Need, ep Endpoints, c *Cluster) (Target, error) {
	t := Target{Need: need, Config: ep.Config()}
	if need.Backend == strategies.BackendNone {
		t.Config = strategies.Config{}
		return t, nil
	}
	b, err := lookupBackend(need.Backend)
	if err != nil {
		return t, err
	}
	t.noun, t.flag, t.env = b.noun, b.flag, b.env
	if need.Backend == strategies.BackendRedis && len(ep.RedisSentinels) > 0 {
		// A replicated Redis serves single-node locks; multi-node ones
		// need independent masters, given beside it or not at all.
		if need.Nodes <= 1 {
			return replicatedTarget(need, ep, c), nil
		}
		if len(ep.RedisAddrs) == 0 {
			return t, fmt.Errorf("%w: this strategy needs %d (give them with %s or %s)", ErrNeedsMasters, need.Nodes, b.flag, b.env)
		}
	}
	eps := b.endpoints(ep)
	switch {
	case len(eps) == 0:
		return t, fmt.Errorf("servers: no %s given or started (%s or %s)", b.noun, b.flag, b.env)
	case need.Nodes > len(eps):
		return t, fmt.Errorf("%w: %d %s(s) given (%s or %s); this strategy needs %d (or unset it to let lockbench start them)",
			ErrTooFewNodes, len(eps), b.noun, b.flag, b.env, need.Nodes)
	case need.Nodes > 0:
		eps = eps[:need.Nodes]
	}
	t.Config = ep.credentials()
	b.toConfig(&t.Config, append([]string(nil), eps...))
	if c != nil {
		// The nodes are lockbench's only if the endpoints in use are theirs:
		// a user may give some kinds of server and let lockbench start others.
		nodes, started := b.nodes(c), b.endpoints(c.Endpoints())
		local := len(started) >= len(eps)
		for i := 0; local && i < len(eps); i++ {
			local = started[i] == eps[i]
		}
		if local {
			t.Nodes = nodes[:len(eps)]
			if need.Backend == strategies.BackendPostgres && c.PostgresStandby != nil {
				t.pg = &pgPair{c: c}
			}
		}
	}
	return t, nil
}

// Len is how many nodes the strategy talks to.
func (t Target) Len() int {
	b, ok := backends[t.Need.Backend]
	if !ok {
		return 0
	}
	return len(b.fromConfig(t.Config))
}

// Local reports whether lockbench started the target's servers, so that a
// fault may kill, restart or move the clock of them.
func (t Target) Local() bool { return t.Nodes != nil }

// Noun names one of the target's nodes for people: "Redis node".
func (t Target) Noun() string { return t.noun }

// Given says how a user names the target's servers: "--redis-addrs or
// LOCKBENCH_REDIS_ADDRS".
func (t Target) Given() string { return t.flag + " or " + t.env }

// Node returns the i-th node, which a fault will stop; an error when i is
// out of range or the servers are the user's.
func (t Target) Node(i int) (Node, error) {
	if err := t.checkIndex(i); err != nil {
		return nil, err
	}
	if !t.Local() {
		return nil, fmt.Errorf("%w: the %ss were given (%s); unset that to let lockbench start its own", ErrNotLocal, t.noun, t.Given())
	}
	if t.group != nil {
		// Node 0 is the primary, wherever the last failover put it.
		if m := t.byRole(); len(m) > i {
			return m[i].Node, nil
		}
	}
	if t.pg != nil {
		// So is a Postgres primary with a standby's.
		ctx, cancel := context.WithTimeout(context.Background(), pgStreamTimeout)
		defer cancel()
		if p, _, err := t.pg.roles(ctx); err == nil {
			return p, nil
		}
	}
	return t.Nodes[i], nil
}

// Addr returns the TCP host:port of the i-th node's endpoint.
func (t Target) Addr(i int) (string, error) {
	if err := t.checkIndex(i); err != nil {
		return "", err
	}
	if t.group != nil {
		if m := t.byRole(); len(m) > i {
			return m[i].Addr, nil
		}
	}
	b := backends[t.Need.Backend]
	return b.hostPort(b.fromConfig(t.Config)[i])
}

// Reroute returns c, a lock config built from t.Config, with the i-th
// endpoint of t's backend pointed at addr (a proxy in front of the node).
// c's own slices are not changed: they may be shared.
func (t Target) Reroute(c strategies.Config, i int, addr string) (strategies.Config, error) {
	if err := t.checkIndex(i); err != nil {
		return c, err
	}
	if t.Replicated() {
		return c, ErrReplicated
	}
	b := backends[t.Need.Backend]
	eps := append([]string(nil), b.fromConfig(c)...)
	if i >= len(eps) {
		return c, fmt.Errorf("servers: the lock config has %d %s endpoint(s), not %d", len(eps), t.noun, t.Len())
	}
	routed, err := b.withHostPort(eps[i], addr)
	if err != nil {
		return c, err
	}
	eps[i] = routed
	b.toConfig(&c, eps)
	return c, nil
}

func (t Target) checkIndex(i int) error {
	if t.Need.Backend == strategies.BackendNone {
		return errors.New("servers: the strategy has no server")
	}
	if n := t.Len(); i < 0 || i >= n {
		return fmt.Errorf("node=%d but the strategy uses %d %s(s) (0..%d)", i, n, t.noun, n-1)
	}
	return nil
}

// Add records that a run needs what need names.
func (n *Needs) Add(need strategies.Need) {
	if b, ok := backends[need.Backend]; ok {
		b.need(n, need.Nodes)
	}
}

// NeedsOf is what the strategies of infos need together: the registry's
// answer to "which servers must run" (strategies.All() for every one).
func NeedsOf(infos []strategies.Info) Needs {
	var n Needs
	for _, info := range infos {
		n.Add(info.Need)
	}
	return n
}

// Merge records everything o needs too.
func (n *Needs) Merge(o Needs) {
	n.Redis = max(n.Redis, o.Redis)
	n.Etcd = n.Etcd || o.Etcd
	n.Postgres = n.Postgres || o.Postgres
	n.ZooKeeper = n.ZooKeeper || o.ZooKeeper
	n.NATS = n.NATS || o.NATS
	n.MySQL = n.MySQL || o.MySQL
}

// Config returns the endpoints as a lock config (TTL and Owner unset).
func (e Endpoints) Config() strategies.Config {
	return e.withCredentials(strategies.Config{
		RedisAddrs:     e.RedisAddrs,
		RedisPassword:  e.RedisPassword,
		RedisSentinels: e.RedisSentinels,
		RedisMaster:    e.RedisMaster,
		EtcdEndpoints:  e.EtcdEndpoints,
		PostgresDSN:    e.PostgresDSN,
		ZKServers:      e.ZKServers,
		NATSURL:        e.NATSURL,
		MySQLDSN:       e.MySQLDSN,
	})
}

// EndpointsOf returns the endpoints a lock config names: Config's inverse,
// for a strategy that hands them on to a process (an adapter, in Env's
// variables).
func EndpointsOf(c strategies.Config) Endpoints {
	return Endpoints{
		RedisAddrs: c.RedisAddrs, RedisPassword: c.RedisPassword, RedisCACert: c.RedisCACert,
		RedisSentinels: c.RedisSentinels, RedisMaster: c.RedisMaster,
		EtcdEndpoints: c.EtcdEndpoints, EtcdCACert: c.EtcdCACert, EtcdCert: c.EtcdCert, EtcdKey: c.EtcdKey,
		EtcdUser: c.EtcdUser, EtcdPassword: c.EtcdPassword,
		PostgresDSN: c.PostgresDSN, ZKServers: c.ZKServers, NATSURL: c.NATSURL, MySQLDSN: c.MySQLDSN,
	}
}
