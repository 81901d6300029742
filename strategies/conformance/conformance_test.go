package conformance_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9/logging"

	"github.com/lockbench/lockbench/servers"
	"github.com/lockbench/lockbench/strategies"
	_ "github.com/lockbench/lockbench/strategies/all"
	"github.com/lockbench/lockbench/strategies/conformance"
)

// TestBuiltinsRegistered fails when a built-in strategy is missing from the
// registry (its package is still a placeholder), so that the suite cannot
// pass by not running it.
func TestBuiltinsRegistered(t *testing.T) {
	for _, name := range strategies.Order {
		if _, ok := strategies.Lookup(name); !ok {
			t.Errorf("strategy %q: got not registered; want registered by its package's init (is the package still a placeholder?)", name)
		}
	}
}

// TestConformance runs every registered strategy through the suite against
// servers it starts itself: 5 Redis nodes, etcd and Postgres.
func TestConformance(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real servers and stops them; run without -short")
	}
	// The suite kills Redis nodes on purpose; go-redis would log every
	// refused dial to stderr, between the test's own lines.
	logging.Disable()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl, err := servers.Start(ctx, servers.Needs{Redis: 5, Etcd: true, Postgres: true}, servers.Options{})
	if err != nil {
		t.Fatalf("start servers: %v", err)
	}
	t.Cleanup(func() {
		if err := cl.Stop(); err != nil {
			t.Errorf("stop servers: %v", err)
		}
	})
	ep := cl.Endpoints()
	env := conformance.Env{Config: strategies.Config{
		RedisAddrs:    ep.RedisAddrs,
		RedisPassword: ep.RedisPassword,
		EtcdEndpoints: ep.EtcdEndpoints,
		PostgresDSN:   ep.PostgresDSN,
	}}
	for _, r := range cl.Redis {
		env.Redis = append(env.Redis, r)
	}
	for _, m := range cl.Etcd {
		env.Etcd = append(env.Etcd, m)
	}
	if cl.Postgres != nil {
		env.Postgres = cl.Postgres
	}
	conformance.Run(t, env)
}
