package watchdog_test

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockbench/lockbench/servers"
	"github.com/lockbench/lockbench/strategies"
	"github.com/lockbench/lockbench/strategies/redisutil"
	"github.com/lockbench/lockbench/strategies/setnx"
	"github.com/lockbench/lockbench/strategies/watchdog"
)

var addr string

func TestMain(m *testing.M) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	cl, err := servers.Start(ctx, servers.Needs{Redis: 1}, servers.Options{})
	cancel()
	if err != nil {
		panic(err)
	}
	addr = cl.Redis[0].Addr
	code := m.Run()
	_ = cl.Stop()
	os.Exit(code)
}

// ttl is the tests' lease: long enough that a busy machine's scheduling delays
// (tens of milliseconds under -race) are small beside its renewals.
const ttl = time.Second

func open(t *testing.T, owner string) strategies.Strategy {
	t.Helper()
	s, err := strategies.New(context.Background(), "setnx-watchdog", strategies.Config{RedisAddrs: []string{addr}, TTL: ttl, Owner: owner})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// A held lease outlives its TTL many times over, its Deadline moving with
// the renewals, and keeps a contender out; once released, the contender
// gets the lock at once.
func TestRenewsWhileHeld(t *testing.T) {
	ctx := context.Background()
	a, b := open(t, "A"), open(t, "B")
	l, err := a.Acquire(ctx, "renew")
	if err != nil {
		t.Fatal(err)
	}
	first := l.Deadline()
	time.Sleep(4 * ttl)
	if _, err := b.Acquire(ctx, "renew"); !errors.Is(err, strategies.ErrNotAcquired) {
		t.Fatalf("B after 4 TTLs with A's watchdog running: got %v; want ErrNotAcquired", err)
	}
	if moved := l.Deadline(); !moved.After(first.Add(2 * ttl)) {
		t.Errorf("Deadline moved %v in 4 TTLs; want more than 2 TTLs", moved.Sub(first))
	}
	if err := l.Release(ctx); err != nil {
		t.Fatalf("Release: got %v; want nil", err)
	}
	lb, err := b.Acquire(ctx, "renew")
	if err != nil {
		t.Fatalf("B after A released: got %v; want the lock", err)
	}
	_ = lb.Release(ctx)
}

// A renewal that finds the lock gone stops the watchdog: it never takes the
// lock back, and Release reports ErrNotOwner. Close stops every watchdog, so
// a closed holder's lock expires by its TTL.
func TestStopsOnLossAndClose(t *testing.T) {
	ctx := context.Background()
	a, b := open(t, "A"), open(t, "B")
	l, err := a.Acquire(ctx, "lost")
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(redisutil.Options(addr, ""))
	defer c.Close()
	if err := c.Del(ctx, redisutil.LockKey("lost")).Err(); err != nil {
		t.Fatal(err)
	}
	lb, err := b.Acquire(ctx, "lost")
	if err != nil {
		t.Fatalf("B after the key was deleted: got %v; want the lock", err)
	}
	time.Sleep(2 * ttl) // A's watchdog fails its renewal meanwhile
	if err := l.Release(ctx); !errors.Is(err, strategies.ErrNotOwner) {
		t.Errorf("A's Release after losing the lock: got %v; want ErrNotOwner", err)
	}
	if err := lb.Release(ctx); err != nil {
		t.Errorf("B's Release: got %v; want nil (A's watchdog must not have touched B's lock)", err)
	}

	held, err := a.Acquire(ctx, "closed")
	if err != nil {
		t.Fatal(err)
	}
	_ = held
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * ttl)
	for {
		l, err := b.Acquire(ctx, "closed")
		if err == nil {
			_ = l.Release(ctx)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("B 5 TTLs after A closed: got %v; want the lock (Close must stop the watchdog)", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// flaky is setnx on the real server whose leases' first renewals fail: the
// first is slow (it waits out its context, as a reply that never came),
// the second errs at once (a dropped connection); later ones reach Redis.
type flaky struct{ strategies.Strategy }

func (f flaky) Acquire(ctx context.Context, key string) (strategies.Lease, error) {
	l, err := f.Strategy.Acquire(ctx, key)
	if err != nil {
		return nil, err
	}
	return &flakyLease{Lease: l}, nil
}

type flakyLease struct {
	strategies.Lease
	calls int // only the watchdog's goroutine calls Extend
}

func (l *flakyLease) Extend(ctx context.Context, ttl time.Duration) error {
	l.calls++
	switch l.calls {
	case 1:
		<-ctx.Done()
		return ctx.Err()
	case 2:
		return strategies.ErrUnavailable
	}
	return l.Lease.(strategies.Extender).Extend(ctx, ttl)
}

// A renewal that times out or fails is tried again while the lease is
// still valid: the lock outlives its TTL many times over although the
// first two renewals failed (with a watchdog that stopped at the first
// failure, B got it one TTL in).
func TestRetriesFailedRenewal(t *testing.T) {
	ctx := context.Background()
	inner, err := setnx.New(ctx, strategies.Config{RedisAddrs: []string{addr}, TTL: ttl, Owner: "A"})
	if err != nil {
		t.Fatal(err)
	}
	a := watchdog.Wrap(flaky{inner}, ttl)
	defer a.Close()
	b := open(t, "B")
	l, err := a.Acquire(ctx, "flaky")
	if err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(4 * ttl); time.Now().Before(end); time.Sleep(ttl / 10) {
		if lb, err := b.Acquire(ctx, "flaky"); !errors.Is(err, strategies.ErrNotAcquired) {
			if lb != nil {
				_ = lb.Release(ctx)
			}
			t.Fatalf("B while A's watchdog retried its renewals: got %v; want ErrNotAcquired", err)
		}
	}
	if err := l.Release(ctx); err != nil {
		t.Errorf("A's Release: got %v; want nil", err)
	}
}
