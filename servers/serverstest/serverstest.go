// Package serverstest starts the real servers a test needs, through
// package servers, and stops them when the test ends.
package serverstest

import (
	"context"
	"testing"
	"time"

	"github.com/lockbench/lockbench/servers"
)

// startTimeout bounds how long the servers may take to start.
const startTimeout = time.Minute

// Start starts the servers n names, with o, for t and stops them when t
// ends. Under -short it skips t; servers that do not start within a minute
// fail it.
func Start(t testing.TB, n servers.Needs, o servers.Options) *servers.Cluster {
	t.Helper()
	if testing.Short() {
		t.Skip("starts servers; run without -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	cl, err := servers.Start(ctx, n, o)
	if err != nil {
		t.Fatalf("start servers: %v", err)
	}
	t.Cleanup(func() { _ = cl.Stop() })
	return cl
}

// Redis starts one Redis node for t and returns its address.
func Redis(t testing.TB) string {
	t.Helper()
	return Start(t, servers.Needs{Redis: 1}, servers.Options{}).Redis[0].Addr
}
