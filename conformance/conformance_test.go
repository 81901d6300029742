package conformance_test

import (
	"context"
	"testing"
	"time"

	_ "github.com/lockbench/lockbench/servers/adapterenv" // adapters reach the servers

	"github.com/redis/go-redis/v9/logging"

	"github.com/lockbench/lockbench/conformance"
	"github.com/lockbench/lockbench/servers"
	"github.com/lockbench/lockbench/strategies"
	_ "github.com/lockbench/lockbench/strategies/all"
)

// TestBuiltinsRegistered fails when a built-in strategy is missing from the
// registry (its package is still a placeholder), so that the suite cannot
// pass by not running it.
func TestBuiltinsRegistered(t *testing.T) {
	for _, name := range strategies.Builtin() {
		if _, ok := strategies.Lookup(name); !ok {
			t.Errorf("strategy %q: got not registered; want registered by its package's init (is the package still a placeholder?)", name)
		}
	}
}

// TestConformance runs every registered strategy through the suite against
// servers it starts itself: every server the registry's strategies need.
func TestConformance(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real servers and stops them; run without -short")
	}
	// The suite kills Redis nodes on purpose; go-redis would log every
	// refused dial to stderr, between the test's own lines.
	logging.Disable()
	// Starting them all (the ZooKeeper JVM, initdb, MariaDB's install)
	// takes a busy machine minutes: 3 of them is a hang.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// Every server some registered strategy needs (5 Redis nodes for
	// redlock, etcd, Postgres, …), asked of the registry.
	cl, err := servers.Start(ctx, servers.NeedsOf(strategies.All()), servers.Options{})
	if err != nil {
		t.Fatalf("start servers: %v", err)
	}
	t.Cleanup(func() {
		if err := cl.Stop(); err != nil {
			t.Errorf("stop servers: %v", err)
		}
	})
	env := conformance.EnvOf(cl)
	conformance.Run(t, env)
}
