package conformance

import (
	"context"
	"time"

	"github.com/lockbench/lockbench/strategies"
)

func testExpiry(t T, h *harness) {
	key := h.key(t)
	sA := h.open(t, ShortTTL, "A")
	sB := h.open(t, ShortTTL, "B")
	before := time.Now()
	a := acquire(t, sA, key)
	dl := a.Deadline()
	// The holder stops: no release, no keepalive. Strategy.Close promises not
	// to release, so the lock must outlive it until its TTL.
	if err := sA.Close(); err != nil {
		t.Errorf("Close: got %v; want nil", err)
	}
	stopped := time.Now()
	free := latest(dl, before.Add(ShortTTL), stopped.Add(ShortTTL))
	tol := h.expiryTolerance()
	ctx, cancel := context.WithDeadline(context.Background(), free.Add(tol))
	defer cancel()
	b, _, err := strategies.AcquireRetry(ctx, sB, key, strategies.Retry{})
	got := time.Now()
	if err != nil {
		t.Fatalf("B after A stopped: got %v after %v; want the lock within TTL %v + tolerance %v",
			err, got.Sub(stopped).Round(time.Millisecond), ShortTTL, tol)
	}
	t.Logf("B took the lock %v after A stopped (TTL %v)", got.Sub(stopped).Round(time.Millisecond), ShortTTL)
	switch {
	case !dl.IsZero() && got.Before(dl):
		t.Errorf("B took the lock %v before A's Deadline; want not before it (Close released the lock, or the Deadline is not conservative)", dl.Sub(got))
	case dl.IsZero() && !h.info.SessionBound && got.Sub(stopped) < ShortTTL/3:
		// A session-bound lock is freed when its holder's session ends,
		// which Close does: at once is right for it.
		t.Errorf("B took the lock %v after A stopped; want about the TTL %v (Close must not release)", got.Sub(stopped), ShortTTL)
	}
	if h.info.Fencing && b.Token() <= a.Token() {
		t.Errorf("B's token: got %d after A's %d; want greater", b.Token(), a.Token())
	}
	release(t, b)
}

// cancelAfter is when the cancel cases give up waiting for a held lock.
const cancelAfter = 100 * time.Millisecond

func testCancel(t T, h *harness) {
	for _, c := range []struct {
		name string
		// held: the lock is held by someone else while Acquire runs.
		held bool
		ctx  func() (context.Context, context.CancelFunc)
	}{
		// A context cancelled before the call.
		{"already-cancelled", false, func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			return ctx, cancel
		}},
		// A cancel while the contender waits or retries.
		{"cancelled-while-held", true, func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(cancelAfter, cancel)
			return ctx, cancel
		}},
		// A deadline that passes while the contender waits or retries.
		{"deadline-while-held", true, func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), cancelAfter)
		}},
	} {
		if c.held && h.control() {
			t.Logf("%s: not run: %s is the control and never waits", c.name, h.info.Name)
			continue
		}
		t.Run(c.name, func(t T) {
			key := h.key(t)
			s := h.open(t, LongTTL, "A")
			other := h.peer(t, s, LongTTL, "B")
			if c.held {
				defer release(t, acquire(t, s, key))
			}
			ctx, cancel := c.ctx()
			defer cancel()
			var (
				l   strategies.Lease
				err error
			)
			limit := cancelAfter + PromptCancel
			took, ok := within(limit, func(context.Context) {
				l, _, err = strategies.AcquireRetry(ctx, other, key, strategies.Retry{})
			})
			switch {
			case !ok:
				t.Fatalf("Acquire with a done context: still running after %v; want a return within %v", took, PromptCancel)
			case l != nil && !c.held:
				// The interface promises promptness, not refusal: a free lock
				// may be granted to a done context (a select picking either).
				t.Logf("granted a free lock to a done context")
				release(t, l)
			case l != nil:
				_ = l.Release(context.Background())
				t.Errorf("got a lease while another holder has the lock; want an error")
			case err == nil:
				t.Errorf("got neither lease nor error; want an error")
			}
			t.Logf("returned after %v: %v", took.Round(time.Millisecond), err)
		})
	}
}

// latest returns the latest of ts.
func latest(ts ...time.Time) time.Time {
	var l time.Time
	for _, t := range ts {
		if t.After(l) {
			l = t
		}
	}
	return l
}
