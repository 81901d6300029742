package conformance

import (
	"context"
	"errors"
	"time"

	"github.com/lockbench/lockbench/strategies"
)

// extendEvery is how often the extend case renews its lease: ShortTTL/4,
// more often than a watchdog's TTL/3, so that a slow round trip under -race
// does not let the lease lapse between two renewals.
const extendEvery = ShortTTL / 4

// extends reports whether the strategy's leases implement
// strategies.Extender. Only a lease can tell, so it takes one, on a key of
// its own, and releases it. When it cannot, it reports true, so that the
// extend case runs and fails saying why.
func (h *harness) extends() bool {
	ctx, cancel := context.WithTimeout(context.Background(), openTimeout)
	defer cancel()
	s, err := strategies.New(ctx, h.info.LookupName(), h.config(LongTTL, "probe"))
	if err != nil {
		return true
	}
	defer s.Close()
	l, _, err := strategies.AcquireRetry(ctx, s, "conformance/"+runID+"/extend-probe/"+h.info.Name, strategies.Retry{})
	if err != nil {
		return true
	}
	defer l.Release(ctx)
	_, ok := l.(strategies.Extender)
	return ok
}

func testExtend(t T, h *harness) {
	t.Run("outlives-ttl", func(t T) { testExtendOutlives(t, h) })
	t.Run("server-down", func(t T) {
		if why := cannotStop(h); why != "" {
			t.Skip(why)
		}
		testExtendServerDown(t, h)
	})
}

// testExtendOutlives has A renew a ShortTTL lease every extendEvery until it
// has lived a TTL past the time its original lease would surely have freed
// the lock, with B trying to take the lock between renewals; then A stops,
// B takes the lock once A's lease runs out, and A's Extend must neither
// succeed nor extend B's lock.
func testExtendOutlives(t T, h *harness) {
	key := h.key(t)
	sA := h.open(t, ShortTTL, "A")
	sB := h.open(t, ShortTTL, "B")
	a := acquire(t, sA, key)
	acquired := time.Now()
	ext := a.(strategies.Extender) // notExtender found it is one
	first := a.Deadline()
	if first.IsZero() {
		release(t, a)
		t.Fatalf("Deadline: got the zero time; want the lease's expiry (it implements Extender, so it expires)")
	}
	// Without extensions B would have the lock by first + tolerance.
	until := first.Add(h.expiryTolerance() + ShortTTL)
	maxAhead := h.info.LeaseTTL(ShortTTL)
	prev, renewals := first, 0
	tick := time.NewTicker(extendEvery)
	defer tick.Stop()
	for time.Now().Before(until) {
		<-tick.C
		sent := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), ShortTTL)
		err := ext.Extend(ctx, ShortTTL)
		cancel()
		returned := time.Now()
		if err != nil {
			t.Fatalf("Extend %d, %v after Acquire: got %v; want nil", renewals+1, sent.Sub(acquired).Round(time.Millisecond), err)
		}
		renewals++
		switch dl := a.Deadline(); {
		case dl.Before(prev):
			t.Errorf("Extend %d: Deadline moved back by %v; want it never to move back", renewals, prev.Sub(dl))
		case !dl.After(returned):
			t.Errorf("Extend %d: Deadline %v before Extend returned; want in the future", renewals, returned.Sub(dl))
		case dl.After(returned.Add(maxAhead)):
			t.Errorf("Extend %d: Deadline %v after Extend returned; want at most the TTL %v", renewals, dl.Sub(returned), maxAhead)
		default:
			prev = dl
		}
		if err := held(sB, key); err != nil {
			t.Fatalf("B after A's Extend %d, %v after Acquire: %v; want it kept out", renewals, time.Since(acquired).Round(time.Millisecond), err)
		}
	}
	dl := a.Deadline()
	if !dl.After(first.Add(h.expiryTolerance())) {
		t.Errorf("Deadline after %d extensions: %v past the original; want it moved on by more than the tolerance %v", renewals, dl.Sub(first), h.expiryTolerance())
	}
	t.Logf("A kept the lock %v past its original Deadline with %d extensions", time.Since(first).Round(time.Millisecond), renewals)

	// A stops extending. Its lock must free by its Deadline plus the
	// tolerance, and not before the Deadline.
	stopped := time.Now()
	time.Sleep(time.Until(dl))
	if moved := a.Deadline(); moved.After(dl) {
		release(t, a)
		t.Skipf("A's Deadline moved on by %v without Extend (renewed by a keepalive), so it does not expire while its holder lives; the expiry case covers a holder that stops", moved.Sub(dl))
	}
	tol := h.expiryTolerance()
	ctx, cancel := context.WithDeadline(context.Background(), latest(dl, stopped.Add(ShortTTL)).Add(tol))
	defer cancel()
	b, _, err := strategies.AcquireRetry(ctx, sB, key, strategies.Retry{})
	got := time.Now()
	if err != nil {
		t.Fatalf("B after A stopped extending: got %v after %v; want the lock within TTL %v + tolerance %v",
			err, got.Sub(stopped).Round(time.Millisecond), ShortTTL, tol)
	}
	if got.Before(dl) {
		t.Errorf("B took the lock %v before A's Deadline; want not before it (the Deadline is not conservative)", dl.Sub(got))
	}
	if h.info.Fencing && b.Token() <= a.Token() {
		t.Errorf("B's token: got %d after A's %d; want greater", b.Token(), a.Token())
	}

	// A's stale Extend, with a long TTL: refused, and B's lock untouched.
	if err := ext.Extend(context.Background(), LongTTL); !errors.Is(err, strategies.ErrNotOwner) {
		t.Errorf("A.Extend after B took the lock: got %v; want ErrNotOwner", err)
	}
	if moved := a.Deadline(); !moved.Equal(dl) {
		t.Errorf("A's Deadline after its refused Extend: moved by %v; want unchanged", moved.Sub(dl))
	}
	if err := held(sA, key); err != nil {
		t.Errorf("after A's stale Extend: %v; want B still holding the lock", err)
	}
	// B does not release: its lock must free on B's own schedule, not
	// LongTTL later, as it would if A's Extend had extended it.
	ctx, cancel = context.WithDeadline(context.Background(), latest(b.Deadline(), got.Add(ShortTTL)).Add(tol))
	defer cancel()
	c, _, err := strategies.AcquireRetry(ctx, sA, key, strategies.Retry{})
	if err != nil {
		t.Fatalf("A again once B's lease ran out: got %v; want the lock within TTL %v + tolerance %v (did A's stale Extend extend B's lock?)", err, ShortTTL, tol)
	}
	release(t, c)
}

// testExtendServerDown checks that Extend with the servers killed fails
// within DownLimit with an error wrapping ErrUnavailable, and leaves
// Deadline alone.
func testExtendServerDown(t T, h *harness) {
	key := h.key(t)
	s := h.open(t, LongTTL, "A")
	l := acquire(t, s, key)
	ext := l.(strategies.Extender) // notExtender found it is one
	dl := l.Deadline()
	restart := h.stop(t, h.nodes())
	defer restart()
	var err error
	took, ok := within(DownLimit, func(ctx context.Context) {
		err = ext.Extend(ctx, LongTTL)
	})
	switch {
	case !ok:
		t.Errorf("Extend with the server down: still running after %v; want an error within %v", took, DownLimit)
	case !errors.Is(err, strategies.ErrUnavailable):
		t.Errorf("Extend with the server down: got %v after %v; want an error wrapping ErrUnavailable", err, took)
	default:
		t.Logf("Extend failed after %v: %v", took.Round(time.Millisecond), err)
	}
	if moved := l.Deadline(); ok && !moved.Equal(dl) {
		t.Errorf("Deadline after a failed Extend: moved by %v; want unchanged", moved.Sub(dl))
	}
}
