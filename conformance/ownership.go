package conformance

import (
	"context"
	"errors"
	"time"

	"github.com/lockbench/lockbench/strategies"
)

func testLease(t T, h *harness) {
	key := h.key(t)
	s := h.open(t, LongTTL, "A")
	l := acquire(t, s, key)
	after := time.Now()
	if got := l.Key(); got != key {
		t.Errorf("Key: got %q; want %q", got, key)
	}
	switch tok := l.Token(); {
	case h.info.Fencing && tok <= 0:
		t.Errorf("Token: got %d; want > 0 (Info.Fencing is true)", tok)
	case !h.info.Fencing && tok != 0:
		t.Errorf("Token: got %d; want 0 (Info.Fencing is false)", tok)
	}
	if dl := l.Deadline(); !dl.IsZero() {
		if !dl.After(after) {
			t.Errorf("Deadline: got %v before Acquire returned; want zero or in the future", after.Sub(dl))
		}
		if dl.After(after.Add(LongTTL)) {
			t.Errorf("Deadline: got %v after Acquire returned; want at most the TTL %v", dl.Sub(after), LongTTL)
		}
	}
	if h.control() {
		t.Logf("exclusion and ownership not checked: %s is the control", h.info.Name)
		release(t, l)
		return
	}
	if err := held(h.peer(t, s, LongTTL, "B"), key); err != nil {
		t.Errorf("second contender while A holds the lock: %v; want it kept out", err)
	}
	release(t, l)
	if err := l.Release(context.Background()); !errors.Is(err, strategies.ErrNotOwner) {
		t.Errorf("second Release: got %v; want ErrNotOwner", err)
	}
	release(t, acquire(t, s, key)) // free again after the release
}

func testStaleAfterRelease(t T, h *harness) {
	key := h.key(t)
	sA := h.open(t, LongTTL, "A")
	sB := h.peer(t, sA, LongTTL, "B")
	a := acquire(t, sA, key)
	release(t, a)
	b := acquire(t, sB, key)
	if err := a.Release(context.Background()); !errors.Is(err, strategies.ErrNotOwner) {
		t.Errorf("A.Release after B took the lock: got %v; want ErrNotOwner", err)
	}
	if err := held(sA, key); err != nil {
		t.Errorf("after A's stale Release: %v; want B still holding the lock", err)
	}
	release(t, b)
}

func testStaleAfterExpiry(t T, h *harness) {
	key := h.key(t)
	sA := h.open(t, ShortTTL, "A")
	sB := h.open(t, ShortTTL, "B")
	a := acquire(t, sA, key)
	dl := a.Deadline()
	if dl.IsZero() {
		release(t, a)
		t.Skip("A's lease has a zero Deadline, so it does not expire while its holder lives; the expiry case covers a holder that stops")
	}
	time.Sleep(time.Until(dl))
	if moved := a.Deadline(); moved.After(dl) {
		release(t, a)
		t.Skipf("A's Deadline moved on by %v (renewed by a keepalive), so it does not expire while its holder lives; the expiry case covers a holder that stops", moved.Sub(dl))
	}
	tol := h.expiryTolerance()
	ctx, cancel := context.WithTimeout(context.Background(), tol)
	defer cancel()
	b, _, err := strategies.AcquireRetry(ctx, sB, key, strategies.Retry{})
	switch {
	case err == nil:
	case errors.Is(err, strategies.ErrNotAcquired) || errors.Is(err, context.DeadlineExceeded):
		// Still held by A, which lives: its lease is renewed (a keepalive),
		// so there is no expiry under a live holder to stage. A must still
		// own it; the expiry case covers a holder that stops.
		if err := a.Release(context.Background()); err != nil {
			t.Fatalf("A.Release with the lock neither expired nor free: got %v; want nil", err)
		}
		t.Skipf("A's lease outlived its Deadline by %v while A was alive (renewed by a keepalive); the expiry case covers a holder that stops", time.Since(dl).Round(time.Millisecond))
	default:
		t.Fatalf("B after A's Deadline passed: got %v; want the lock within %v", err, tol)
	}
	if err := a.Release(context.Background()); !errors.Is(err, strategies.ErrNotOwner) {
		t.Errorf("A.Release after expiry, with B holding: got %v; want ErrNotOwner", err)
	}
	if err := held(sA, key); err != nil {
		t.Errorf("after A's stale Release: %v; want B still holding the lock", err)
	}
	if h.info.Fencing && b.Token() <= a.Token() {
		t.Errorf("B's token: got %d after A's %d; want greater", b.Token(), a.Token())
	}
	release(t, b)
}

func testFencingOrder(t T, h *harness) {
	const holders = 6
	key := h.key(t)
	objects := []strategies.Strategy{h.open(t, LongTTL, "A"), h.open(t, LongTTL, "B")}
	var last int64
	for i := range holders {
		l := acquire(t, objects[i%2], key)
		if tok := l.Token(); tok <= last {
			t.Errorf("holder %d: got token %d after %d; want strictly increasing", i, tok, last)
		} else {
			last = tok
		}
		release(t, l)
	}
}
