package queue_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/lockbench/lockbench/conformance"
	"github.com/lockbench/lockbench/internal/syncbuf"
	"github.com/lockbench/lockbench/servers"
	"github.com/lockbench/lockbench/strategies"
	"github.com/lockbench/lockbench/strategies/queue"
)

// natsCluster starts a NATS server for the package's tests (or uses the
// one LOCKBENCH_NATS_URL names).
func natsCluster(t *testing.T) (servers.Endpoints, *servers.Cluster) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a real NATS server; run without -short")
	}
	if u := os.Getenv(servers.EnvNATSURL); u != "" {
		return servers.Endpoints{NATSURL: u}, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	log := &syncbuf.Buffer{}
	c, err := servers.Start(ctx, servers.Needs{NATS: true}, servers.Options{Log: log})
	if err != nil {
		t.Fatalf("start NATS: %v", err)
	}
	t.Cleanup(func() { _ = c.Stop() })
	t.Cleanup(func() { logServerWarnings(t, log.String()) })
	return c.Endpoints(), c
}

// logServerWarnings logs the server's warnings and errors when the test
// failed: a JetStream API error such as "error creating store for stream"
// gives its cause only in the server's log.
func logServerWarnings(t *testing.T, log string) {
	if !t.Failed() {
		return
	}
	for line := range strings.Lines(log) {
		if strings.Contains(line, "[WRN]") || strings.Contains(line, "[ERR]") {
			t.Logf("nats-server: %s", strings.TrimRight(line, "\n"))
		}
	}
}

// TestConformance runs the queue through the conformance table against a
// NATS server it starts.
func TestConformance(t *testing.T) {
	ep, c := natsCluster(t)
	conformance.Run(t, conformance.Env{Endpoints: ep, Cluster: c, Strategies: []string{"queue"}})
}

func open(t *testing.T, url string, ttl time.Duration, owner string) *queue.Queue {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	q, err := queue.New(ctx, strategies.Config{NATSURL: url, TTL: ttl, Owner: owner})
	if err != nil {
		t.Fatalf("queue.New: got %v; want a queue", err)
	}
	t.Cleanup(func() { _ = q.Close() })
	return q
}

// TestDuplicateDropped: the second publish of a payment is dropped, and the
// one message kept carries the payment.
func TestDuplicateDropped(t *testing.T) {
	ep, _ := natsCluster(t)
	url := ep.NATSURL + "?stream=DUP"
	a, b := open(t, url, 10*time.Second, "A"), open(t, url, 10*time.Second, "B")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.Reset(ctx); err != nil {
		t.Fatalf("Reset: %v", err)
	}
	key := "lockbench:acct:7"
	fresh, err := a.Enqueue(ctx, key, 42, 7, 100)
	if err != nil || !fresh {
		t.Fatalf("first Enqueue: got %v, %v; want true, nil", fresh, err)
	}
	fresh, err = b.Enqueue(ctx, key, 42, 7, 100)
	if err != nil || fresh {
		t.Fatalf("second Enqueue: got %v, %v; want false (dropped), nil", fresh, err)
	}
	l, err := b.Next(ctx, key)
	if err != nil {
		t.Fatalf("Next: %v", err)
	}
	p, acct, amount, ok := l.(*queue.Lease).Carries()
	if !ok || p != 42 || acct != 7 || amount != 100 {
		t.Errorf("Carries: got %d %d %d %v; want 42 7 100 true", p, acct, amount, ok)
	}
	if err := l.Release(ctx); err != nil {
		t.Errorf("Release: %v", err)
	}
	short, scancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer scancel()
	if l, err := a.Next(short, key); err == nil {
		t.Errorf("Next after the ack: got a message (token %d); want none", l.Token())
	}
}

// TestRedelivery: a message not acked within the ack deadline is
// redelivered to another consumer with a newer token, and the stale
// holder's Release acks nothing.
func TestRedelivery(t *testing.T) {
	ep, _ := natsCluster(t)
	url := ep.NATSURL + "?stream=REDELIVER"
	ttl := 300 * time.Millisecond
	a, b := open(t, url, ttl, "A"), open(t, url, ttl, "B")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.Reset(ctx); err != nil {
		t.Fatalf("Reset: %v", err)
	}
	key := "lockbench:acct:3"
	if _, err := a.Enqueue(ctx, key, 1, 3, 10); err != nil {
		t.Fatal(err)
	}
	la, err := a.Next(ctx, key)
	if err != nil {
		t.Fatalf("A Next: %v", err)
	}
	lb, err := b.Next(ctx, key) // waits for the ack deadline
	if err != nil {
		t.Fatalf("B Next: %v", err)
	}
	if !lb.(*queue.Lease).Redelivered() {
		t.Errorf("B's lease: got Redelivered false; want true")
	}
	if lb.Token() <= la.Token() {
		t.Errorf("tokens: got A %d, B %d; want B's newer", la.Token(), lb.Token())
	}
	if err := la.Release(ctx); !errors.Is(err, strategies.ErrNotOwner) {
		t.Errorf("A's late Release: got %v; want ErrNotOwner", err)
	}
	if err := lb.Release(ctx); err != nil {
		t.Errorf("B's Release: %v", err)
	}
}
