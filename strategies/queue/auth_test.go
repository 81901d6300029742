package queue_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"

	"github.com/lockbench/lockbench/strategies"
	"github.com/lockbench/lockbench/strategies/queue"
)

// authServer runs a nats-server with JetStream in this process (a user's
// server that needs credentials) and returns its host:port.
func authServer(t *testing.T, opts natsserver.Options) string {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a real NATS server; run without -short")
	}
	opts.Host, opts.Port, opts.JetStream, opts.StoreDir, opts.NoSigs, opts.NoLog = "127.0.0.1", -1, true, t.TempDir(), true, true
	s, err := natsserver.NewServer(&opts)
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server not ready")
	}
	t.Cleanup(s.Shutdown)
	return s.Addr().String()
}

// Credentials in the URL (user and password, or a token) reach the
// server; wrong ones are refused with an error that does not show them.
func TestCredentials(t *testing.T) {
	userAddr := authServer(t, natsserver.Options{Username: "bench", Password: "s3cret-pw"})
	tokenAddr := authServer(t, natsserver.Options{Authorization: "s3cret-token"})
	for _, c := range []struct {
		name, url string
		ok        bool
	}{
		// user and password from the URL
		{"user", fmt.Sprintf("nats://bench:s3cret-pw@%s", userAddr), true},
		// a wrong password is refused
		{"bad-password", fmt.Sprintf("nats://bench:s3cret-wrong@%s", userAddr), false},
		// a token from the URL
		{"token", fmt.Sprintf("nats://s3cret-token@%s", tokenAddr), true},
		// no token is refused
		{"no-token", "nats://" + tokenAddr, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			q, err := queue.New(ctx, strategies.Config{NATSURL: c.url, TTL: time.Second})
			if c.ok {
				if err != nil {
					t.Fatalf("New: got %v; want a queue", err)
				}
				defer q.Close()
				l, err := q.Acquire(ctx, "k")
				if err != nil {
					t.Fatalf("Acquire: %v", err)
				}
				if err := l.Release(ctx); err != nil {
					t.Errorf("Release: %v", err)
				}
				return
			}
			if err == nil {
				q.Close()
				t.Fatalf("New: got a queue; want an authorization error")
			}
			if strings.Contains(err.Error(), "s3cret") {
				t.Errorf("New: got %q; want the credentials not shown", err)
			}
		})
	}
}
