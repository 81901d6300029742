package conformance_test

import (
	"context"
	"testing"
	"time"

	"github.com/lockbench/lockbench/conformance"
	"github.com/lockbench/lockbench/servers"
)

// The Postgres locks through the whole suite on a primary with a
// streaming standby, the failover case included: the primary killed in a
// stream of acquires, the standby promoted, the same strategy object
// acquiring again through its multi-host DSN.
func TestConformancePgReplica(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Postgres primary and standby and kills them; run without -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cl, err := servers.Start(ctx, servers.Needs{Postgres: true}, servers.Options{PgTopology: servers.PgReplica})
	if err != nil {
		t.Fatalf("start the Postgres replica topology: %v", err)
	}
	t.Cleanup(func() {
		if err := cl.Stop(); err != nil {
			t.Errorf("stop servers: %v", err)
		}
	})
	env := conformance.EnvOf(cl)
	env.Strategies = []string{"pg-advisory", "pg-onconflict"}
	conformance.Run(t, env)
}
