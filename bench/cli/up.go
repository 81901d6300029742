package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/lockbench/lockbench/servers"
	"github.com/lockbench/lockbench/strategies"
)

// maxUpRedis bounds `lockbench up --redis`: 32 nodes.
const maxUpRedis = 32

// upOptions are the parsed and checked flags of `lockbench up`.
type upOptions struct {
	redisNodes, members int
	aof                 bool
	topology            servers.Topology
	pgTopology          servers.PgTopology
	pgSync              bool
}

// parseUp parses and checks the flags of `lockbench up`.
func parseUp(args []string, stdout, stderr io.Writer) (upOptions, error) {
	var o upOptions
	fs := newFlagSet("up", stderr)
	fs.IntVar(&o.redisNodes, "redis", 5, fmt.Sprintf("Redis nodes to start, 0..%d", maxUpRedis))
	fs.IntVar(&o.members, "etcd-members", 1, "etcd members: 1 or 3")
	fs.BoolVar(&o.aof, "redis-aof", false, "Redis nodes persist with appendonly")
	topo := fs.String("redis-topology", "masters", "masters (--redis independent nodes) or sentinel (one primary, 2 replicas, 3 Sentinels; prints "+servers.EnvRedisSentinels+")")
	pgTopo := fs.String("pg-topology", "single", "single (one Postgres) or replica (a primary and a hot standby streaming from it; "+servers.EnvPostgresDSN+" names both)")
	pgSync := fs.String("pg-sync", "off", "off or on: with --pg-topology replica, on makes the primary wait for the standby on every commit")
	if err := parseFlags(fs, args, stdout); err != nil {
		return o, err
	}
	var err error
	if o.pgTopology, o.pgSync, err = parsePgLayout(*pgTopo, *pgSync); err != nil {
		return o, err
	}
	t, err := servers.ParseTopology(*topo)
	if err != nil {
		return o, usageErr("--redis-topology: %v", err)
	}
	o.topology = t
	if o.redisNodes < 0 || o.redisNodes > maxUpRedis {
		return o, usageErr("--redis: want 0..%d, got %d", maxUpRedis, o.redisNodes)
	}
	if o.members != 1 && o.members != 3 {
		return o, usageErr("--etcd-members: want 1 or 3, got %d", o.members)
	}
	return o, nil
}

// runUp is `lockbench up`: start every local server, print the endpoints in
// the LOCKBENCH_* form, and stop them all on Ctrl-C.
func runUp(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parseUp(args, stdout, stderr)
	if err != nil {
		return err
	}
	// Every server a registered strategy needs, with --redis nodes.
	need := servers.NeedsOf(strategies.All())
	need.Redis = o.redisNodes
	if o.topology == servers.TopologySentinel {
		need.Redis = max(need.Redis, 1) // the group, whatever --redis says
	}
	c, err := servers.Start(ctx, need, servers.Options{EtcdMembers: o.members, RedisAOF: o.aof, RedisTopology: o.topology,
		PgTopology: o.pgTopology, PgSync: o.pgSync})
	if err != nil {
		return err
	}
	defer c.Stop()
	for _, line := range c.Endpoints().Env() {
		fmt.Fprintf(stdout, "export %s\n", shellQuote(line))
	}
	fmt.Fprintln(stderr, "servers are up; Ctrl-C stops them")
	<-ctx.Done()
	fmt.Fprintln(stderr, "stopping servers")
	return nil
}

// shellQuote quotes the value of KEY=value for a POSIX shell.
func shellQuote(kv string) string {
	for i := range kv {
		if kv[i] == '=' {
			v := kv[i+1:]
			q := "'"
			for _, r := range v {
				if r == '\'' {
					q += `'\''`
				} else {
					q += string(r)
				}
			}
			return kv[:i+1] + q + "'"
		}
	}
	return kv
}
