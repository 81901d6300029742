package conformance_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9/logging"

	"github.com/lockbench/lockbench/conformance"
	"github.com/lockbench/lockbench/servers"
	"github.com/lockbench/lockbench/strategies"
)

// TestConformanceSentinel runs the single-node Redis strategies through
// the suite on the replicated topology lockbench starts itself (a primary,
// two replicas, three Sentinels): they find the primary through the
// Sentinels, and the failover case kills it in the middle of a stream of
// acquires.
func TestConformanceSentinel(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a replicated Redis and Sentinels and kills them; run without -short")
	}
	logging.Disable()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cl, err := servers.Start(ctx, servers.Needs{Redis: 1}, servers.Options{RedisTopology: servers.TopologySentinel})
	if err != nil {
		t.Fatalf("start the sentinel topology: %v", err)
	}
	t.Cleanup(func() {
		if err := cl.Stop(); err != nil {
			t.Errorf("stop servers: %v", err)
		}
	})
	target, err := servers.TargetFor(strategies.Need{Backend: strategies.BackendRedis, Nodes: 1}, cl.Endpoints(), cl)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"setnx", "fencing", "redislock", "setnx-watchdog"} {
		// Each strategy starts on a settled group: the cases before it
		// killed the primary (failover) and every node (server-down).
		// Each wait has its own minute, not what the strategies
		// before it left of the start's.
		rctx, rcancel := context.WithTimeout(context.Background(), time.Minute)
		primary, _, err := target.Roles(rctx)
		rcancel()
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: the primary is %s", name, primary.Node.Name())
		env := conformance.EnvOf(cl)
		env.Strategies = []string{name}
		conformance.Run(t, env)
	}
}
