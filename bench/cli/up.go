package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/lockbench/lockbench/servers"
	"github.com/lockbench/lockbench/strategies"
)

// runUp is `lockbench up`: start every local server, print the endpoints in
// the LOCKBENCH_* form, and stop them all on Ctrl-C.
func runUp(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("up", stderr)
	redisNodes := fs.Int("redis", 5, "Redis nodes to start")
	members := fs.Int("etcd-members", 1, "etcd members: 1 or 3")
	aof := fs.Bool("redis-aof", false, "Redis nodes persist with appendonly")
	if err := parseFlags(fs, args, stdout); err != nil {
		return err
	}
	if *redisNodes < 0 || *redisNodes > 32 {
		return usageErr("--redis: want 0..32, got %d", *redisNodes)
	}
	if *members != 1 && *members != 3 {
		return usageErr("--etcd-members: want 1 or 3, got %d", *members)
	}
	// Every server a registered strategy needs, with --redis nodes.
	need := servers.NeedsOf(strategies.All())
	need.Redis = *redisNodes
	c, err := servers.Start(ctx, need, servers.Options{EtcdMembers: *members, RedisAOF: *aof})
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
