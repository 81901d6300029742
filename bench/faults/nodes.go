package faults

import (
	"context"
	"errors"
	"fmt"

	"github.com/lockbench/lockbench/loadgen"
	"github.com/lockbench/lockbench/servers"
	"github.com/lockbench/lockbench/strategies"
)

// ErrNeedsLocalServers is returned by Setup of a fault that kills, restarts
// or moves the clock of a server, when the run uses servers lockbench did not
// start (given by flags or LOCKBENCH_* variables).
var ErrNeedsLocalServers = errors.New("faults: this fault needs servers lockbench starts itself")

// node is one server a fault acts on.
type node struct {
	name  string // "redis-2 (127.0.0.1:6390)"
	kill  func() error
	start func(context.Context) error
	redis *servers.Redis // nil unless a Redis node
}

// redisNodes is how many of Lock.RedisAddrs the strategy uses.
func redisNodes(env *loadgen.FaultEnv) int {
	if env.Info.RedisNodes <= 1 {
		return min(1, len(env.Lock.RedisAddrs))
	}
	if env.Lock.Nodes > 0 {
		return min(env.Lock.Nodes, len(env.Lock.RedisAddrs))
	}
	return len(env.Lock.RedisAddrs)
}

// needsLocal wraps ErrNeedsLocalServers with what is missing.
func needsLocal(fault, what, flag string) error {
	return fmt.Errorf("%w: %s acts on the %s, which were given (%s); unset that to let lockbench start its own", ErrNeedsLocalServers, fault, what, flag)
}

// serverNode returns the i-th server of the strategy's backend, which the
// fault will kill or restart: a Redis node, an etcd member, or Postgres.
func serverNode(fault string, env *loadgen.FaultEnv, i int) (node, error) {
	c := env.Cluster
	switch env.Info.Backend {
	case strategies.BackendRedis:
		n := redisNodes(env)
		if i >= n {
			return node{}, fmt.Errorf("%s: node=%d but %s uses %d Redis node(s) (0..%d)", fault, i, env.Strategy, n, n-1)
		}
		if c == nil || i >= len(c.Redis) || c.Redis[i].Addr != env.Lock.RedisAddrs[i] {
			return node{}, needsLocal(fault, "Redis nodes", "--redis-addrs or "+servers.EnvRedisAddrs)
		}
		r := c.Redis[i]
		return node{name: fmt.Sprintf("redis-%d (%s)", i, r.Addr), kill: r.Kill, start: r.Start, redis: r}, nil
	case strategies.BackendEtcd:
		if c == nil || len(c.Etcd) == 0 {
			return node{}, needsLocal(fault, "etcd members", "--etcd-endpoints or "+servers.EnvEtcdEndpoints)
		}
		if i >= len(c.Etcd) {
			return node{}, fmt.Errorf("%s: node=%d but the etcd cluster has %d member(s) (0..%d)", fault, i, len(c.Etcd), len(c.Etcd)-1)
		}
		m := c.Etcd[i]
		return node{name: fmt.Sprintf("etcd-%d (%s)", i, m.ClientURL), kill: m.Kill, start: m.Start}, nil
	case strategies.BackendPostgres:
		if c == nil || c.Postgres == nil {
			return node{}, needsLocal(fault, "Postgres server", "--pg-dsn or "+servers.EnvPostgresDSN)
		}
		if i != 0 {
			return node{}, fmt.Errorf("%s: node=%d but there is one Postgres server (node 0)", fault, i)
		}
		if env.Scenario.Store == "postgres" {
			return node{}, fmt.Errorf("%s: with --store postgres the store lives on the Postgres server too; killing it would end the run (use --store memory)", fault)
		}
		p := c.Postgres
		return node{name: "postgres", kill: p.Kill, start: p.Start}, nil
	}
	return node{}, fmt.Errorf("%s: %s has no server to act on", fault, env.Strategy)
}
