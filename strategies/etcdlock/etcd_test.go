package etcdlock

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/lockbench/lockbench/servers"
	"github.com/lockbench/lockbench/strategies"
)

// endpoints are the client URLs of the etcd cluster the tests share: the one
// named by LOCKBENCH_ETCD_ENDPOINTS, or one TestMain starts.
var endpoints []string

func TestMain(m *testing.M) { os.Exit(runTests(m)) }

func runTests(m *testing.M) int {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	ep, cluster, err := servers.Ensure(ctx, servers.Needs{Etcd: true}, servers.EndpointsFromEnv(), servers.Options{})
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "etcdlock: start etcd:", err)
		return 1
	}
	defer cluster.Stop()
	endpoints = ep.EtcdEndpoints
	return m.Run()
}

// newEtcd returns a strategy on the shared cluster, closed when t ends.
func newEtcd(t *testing.T, ttl time.Duration) *Etcd {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	e, err := New(ctx, strategies.Config{EtcdEndpoints: endpoints, TTL: ttl, Owner: t.Name()})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { _ = e.Close() })
	return e
}

// testKey returns a lock key no other test uses, even across runs against
// one cluster.
func testKey(t *testing.T) string {
	return fmt.Sprintf("%s-%d", t.Name(), time.Now().UnixNano())
}

func acquire(t *testing.T, e *Etcd, key string) strategies.Lease {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l, err := e.Acquire(ctx, key)
	if err != nil {
		t.Fatalf("Acquire(%q): %v", key, err)
	}
	return l
}

func TestTTLSeconds(t *testing.T) {
	tests := []struct {
		ttl  time.Duration
		want int64
	}{
		{0, 1},                         // no TTL: etcd's smallest
		{time.Millisecond, 1},          // below a second rounds up
		{time.Second, 1},               // exact
		{1500 * time.Millisecond, 2},   // rounds up, never down
		{2 * time.Second, 2},           // the default
		{10*time.Second + 1, 11},       // a nanosecond over
		{-time.Second, 1},              // nonsense still yields a valid TTL
		{90 * time.Second, 90},         // long
		{999 * time.Millisecond, 1},    // just under a second
		{2001 * time.Millisecond, 3},   // just over two
		{59999 * time.Millisecond, 60}, // just under a minute
	}
	for _, tt := range tests {
		if got := ttlSeconds(tt.ttl); got != tt.want {
			t.Errorf("ttlSeconds(%v) = %d; want %d", tt.ttl, got, tt.want)
		}
	}
}

func TestRegistered(t *testing.T) {
	info, ok := strategies.Lookup("etcd")
	if !ok {
		t.Fatal(`Lookup("etcd"): not registered`)
	}
	if info.Need.Backend != strategies.BackendEtcd || !info.Fencing || !info.CrossProcess {
		t.Errorf("Info = %+v; want Backend etcd, Fencing and CrossProcess", info)
	}
	s, err := strategies.New(context.Background(), "etcd", strategies.Config{EtcdEndpoints: endpoints})
	if err != nil {
		t.Fatalf("strategies.New: %v", err)
	}
	defer s.Close()
	if !strategies.Blocks(s) {
		t.Error("Blocks = false; want true")
	}
}

// TestFactoryError checks that the registered factory reports a cluster
// nobody listens on within DefaultOpTimeout, with a nil Strategy (not a nil
// *Etcd in a non-nil interface).
func TestFactoryError(t *testing.T) {
	start := time.Now()
	s, err := strategies.New(context.Background(), "etcd", strategies.Config{EtcdEndpoints: []string{"http://127.0.0.1:1"}})
	took := time.Since(start)
	if !errors.Is(err, strategies.ErrUnavailable) {
		t.Errorf("New with nobody listening: got %v; want ErrUnavailable", err)
	}
	if s != nil {
		t.Errorf("New with nobody listening: got Strategy %#v; want nil", s)
	}
	if took > DefaultOpTimeout+time.Second {
		t.Errorf("New with nobody listening took %v; want about %v", took, DefaultOpTimeout)
	}
	if _, err := New(context.Background(), strategies.Config{}); err == nil {
		t.Error("New without endpoints: got nil error")
	}
}

// TestOneInstanceSameKey checks that a second Acquire of a held key through
// the same strategy object waits: with one session it would find the
// session's own key and believe it held the lock.
func TestOneInstanceSameKey(t *testing.T) {
	e := newEtcd(t, 0)
	key := testKey(t)
	first := acquire(t, e, key)
	got := make(chan strategies.Lease, 1)
	go func() {
		l, err := e.Acquire(context.Background(), key)
		if err != nil {
			t.Errorf("second Acquire: %v", err)
		}
		got <- l
	}()
	select {
	case <-got:
		t.Fatal("second Acquire of a held key returned before the first Release")
	case <-time.After(300 * time.Millisecond):
	}
	if err := first.Release(context.Background()); err != nil {
		t.Fatalf("Release: %v", err)
	}
	select {
	case l := <-got:
		if l != nil && l.Token() <= first.Token() {
			t.Errorf("second holder's token %d; want > %d", l.Token(), first.Token())
		}
	case <-time.After(5 * time.Second):
		t.Fatal("second Acquire still waiting 5s after the Release")
	}
}

// TestKeysWithSlashes checks that lock "a" and lock "a/b" are independent
// even though etcd keys are prefixes of each other.
func TestKeysWithSlashes(t *testing.T) {
	e1, e2 := newEtcd(t, 0), newEtcd(t, 0)
	key := testKey(t)
	l := acquire(t, e1, key)
	defer l.Release(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	l2, err := e2.Acquire(ctx, key+"/b")
	if err != nil {
		t.Fatalf("Acquire(%q) while %q is held: %v; want the lock", key+"/b", key, err)
	}
	_ = l2.Release(ctx)
}

// TestCancelledWaiterLeavesQueue checks that a waiter that gives up (its
// context cancelled while it is queued) takes its key out of etcd's queue,
// so that it does not block the next contender, and that its instance can
// take the lock again. (The conformance suite's cancel case checks that the
// cancelled Acquire returns promptly.)
func TestCancelledWaiterLeavesQueue(t *testing.T) {
	e1, e2, e3 := newEtcd(t, 0), newEtcd(t, 0), newEtcd(t, 0)
	key := testKey(t)
	held := acquire(t, e1, key)

	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := e2.Acquire(ctx, key)
		errc <- err
	}()
	time.Sleep(200 * time.Millisecond) // e2 is queued by now
	cancel()
	select {
	case err := <-errc:
		if err == nil {
			t.Fatal("cancelled Acquire: got a lease while the lock was held; want an error")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("cancelled Acquire still waiting after 5s")
	}

	got := make(chan strategies.Lease, 1)
	go func() {
		l, err := e3.Acquire(context.Background(), key)
		if err != nil {
			t.Errorf("third contender: %v", err)
		}
		got <- l
	}()
	time.Sleep(100 * time.Millisecond)
	if err := held.Release(context.Background()); err != nil {
		t.Fatalf("Release: %v", err)
	}
	select {
	case l := <-got:
		if l != nil {
			_ = l.Release(context.Background())
		}
	case <-time.After(3 * time.Second):
		t.Fatal("third contender still waiting 3s after the holder released: the cancelled waiter's key blocks it")
	}
	// e2 itself can take the lock again.
	l := acquire(t, e2, key)
	_ = l.Release(context.Background())
}

// TestSessionExpired plays a process paused for longer than the TTL: its
// session's keepalives stop (Orphan), the server expires the lease, another
// instance takes the lock, the paused holder's Release reports ErrNotOwner,
// and its next Acquire works on a new session, not the expired one. (The
// conformance suite's stale-release-after-expiry case cannot stage this for
// etcd, whose live holders keep their leases alive; its expiry case checks
// that the lock passes on after the TTL, not before the Deadline, with a
// larger token.)
func TestSessionExpired(t *testing.T) {
	paused, other := newEtcd(t, time.Second), newEtcd(t, time.Second)
	key := testKey(t)
	stale := acquire(t, paused, key)
	old := stale.(*lease).s
	old.Orphan() // the "pause": no more keepalives

	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	next, err := other.Acquire(ctx, key)
	if err != nil {
		t.Fatalf("Acquire after the holder's lease expired: %v", err)
	}
	t.Logf("lock passed on %v after the pause (granted TTL %v)", time.Since(start), old.ttl)
	if err := stale.Release(ctx); !errors.Is(err, strategies.ErrNotOwner) {
		t.Errorf("stale holder's Release: got %v; want ErrNotOwner", err)
	}

	// The paused instance recovers: a new session, not the dead one.
	l := acquire(t, paused, key+"-other")
	if s := l.(*lease).s; s == old {
		t.Error("Acquire after expiry reused the expired session")
	}
	_ = l.Release(ctx)
	if err := next.Release(ctx); err != nil {
		t.Errorf("Release: %v", err)
	}
	l = acquire(t, paused, key)
	if l.Token() <= next.Token() {
		t.Errorf("token %d after recovery; want > %d", l.Token(), next.Token())
	}
	_ = l.Release(ctx)
}

// TestSessionExpiresWhileWaiting checks that a waiter whose session expires
// keeps waiting on a new session instead of failing or hanging.
func TestSessionExpiresWhileWaiting(t *testing.T) {
	holder, waiter := newEtcd(t, time.Second), newEtcd(t, time.Second)
	key := testKey(t)
	held := acquire(t, holder, key)
	waiter.mu.Lock()
	s := waiter.sessions[0]
	waiter.mu.Unlock()

	got := make(chan error, 1)
	go func() {
		l, err := waiter.Acquire(context.Background(), key)
		if err == nil {
			if l.(*lease).s == s {
				err = errors.New("lock granted on the expired session")
			}
			_ = l.Release(context.Background())
		}
		got <- err
	}()
	time.Sleep(200 * time.Millisecond)
	s.Orphan() // the waiter's session stops being kept alive
	time.Sleep(3 * time.Second)
	select {
	case err := <-got:
		t.Fatalf("waiter returned while the lock was held: %v", err)
	default:
	}
	if err := held.Release(context.Background()); err != nil {
		t.Fatalf("Release: %v", err)
	}
	select {
	case err := <-got:
		if err != nil {
			t.Errorf("waiter: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("waiter still waiting 5s after the holder released")
	}
}

// TestServerDownUnderWaiter stops the cluster under a held lock and a waiter
// already queued for it, and checks that the waiter's Acquire (which only
// the connection watch in lock can end) and the holder's Release return an
// error wrapping ErrUnavailable within 5s, and that the waiter's instance
// takes locks again once the cluster is back. (The conformance suite's
// server-down case checks a fresh Acquire, New and the recovery of an
// instance that was idle.)
func TestServerDownUnderWaiter(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cluster, err := servers.Start(ctx, servers.Needs{Etcd: true}, servers.Options{})
	if err != nil {
		t.Fatalf("start etcd: %v", err)
	}
	defer cluster.Stop()
	cfg := strategies.Config{EtcdEndpoints: cluster.Endpoints().EtcdEndpoints}
	holder, err := New(ctx, cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	defer holder.Close()
	waiter, err := New(ctx, cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	defer waiter.Close()
	key := testKey(t)
	held := acquire(t, holder, key)
	waited := make(chan error, 1)
	go func() {
		_, err := waiter.Acquire(context.Background(), key)
		waited <- err
	}()
	time.Sleep(200 * time.Millisecond)

	if err := cluster.Etcd[0].Kill(); err != nil {
		t.Fatalf("Kill: %v", err)
	}
	stopped := time.Now()
	const bound = 5 * time.Second
	check := func(what string, err error, start time.Time) {
		t.Helper()
		took := time.Since(start)
		t.Logf("%s: %v after %v", what, err, took.Round(time.Millisecond))
		if !errors.Is(err, strategies.ErrUnavailable) {
			t.Errorf("%s with etcd stopped: got %v; want ErrUnavailable", what, err)
		}
		if took > bound {
			t.Errorf("%s with etcd stopped took %v; want < %v", what, took, bound)
		}
	}
	select {
	case err := <-waited:
		check("waiting Acquire", err, stopped)
	case <-time.After(2 * bound):
		t.Fatal("waiting Acquire still waiting 10s after etcd stopped")
	}
	start := time.Now()
	check("Release", held.Release(context.Background()), start)

	if err := cluster.Etcd[0].Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	l := acquire(t, waiter, key+"-after")
	if err := l.Release(ctx); err != nil {
		t.Errorf("Release after restart: %v", err)
	}
}

// TestDeadlineFollowsKeepalive checks that a held lease's Deadline moves on
// with the keepalives and stops when they stop.
func TestDeadlineFollowsKeepalive(t *testing.T) {
	e := newEtcd(t, 0)
	l := acquire(t, e, testKey(t))
	first := l.Deadline()
	time.Sleep(1500 * time.Millisecond) // keepalives go every TTL/3, about 670ms
	moved := l.Deadline()
	if !moved.After(first) {
		t.Errorf("Deadline after 1.5s: moved by %v; want later (renewed)", moved.Sub(first))
	}
	l.(*lease).s.Orphan()
	stopped := l.Deadline()
	time.Sleep(1500 * time.Millisecond)
	if got := l.Deadline(); !got.Equal(stopped) {
		t.Errorf("Deadline moved by %v after the keepalives stopped; want it fixed", got.Sub(stopped))
	}
}
