package conformance

import (
	"context"
	"errors"
	"sync"

	"github.com/lockbench/lockbench/strategies"
)

// trackingCtx is the context of one call, as the harness's call contexts
// are (package loadgen, deadlines): a context that is not one of the
// context package's, with a Done channel and an AfterFunc method, so that
// whatever registers with it (context.AfterFunc, and every context derived
// from it: WithTimeout, WithCancel) does so through AfterFunc, where it is
// counted. Its Deadline, Err and Value are the parent's; its Done closes
// when the parent is done.
type trackingCtx struct {
	context.Context
	done chan struct{}
	stop func() bool

	mu sync.Mutex
	// live counts the registrations neither stopped nor run; total all.
	live, total int
}

// newTrackingCtx returns a tracking context under parent; call close when
// done with it.
func newTrackingCtx(parent context.Context) *trackingCtx {
	c := &trackingCtx{Context: parent, done: make(chan struct{})}
	c.stop = context.AfterFunc(parent, func() { close(c.done) })
	return c
}

func (c *trackingCtx) close() { c.stop() }

// Done is closed when the parent is done.
func (c *trackingCtx) Done() <-chan struct{} { return c.done }

// AfterFunc registers f (run in its own goroutine once c is done) and
// counts it live until it is stopped or has run.
func (c *trackingCtx) AfterFunc(f func()) (stop func() bool) {
	c.mu.Lock()
	c.live++
	c.total++
	c.mu.Unlock()
	var once sync.Once
	settle := func() (first bool) {
		once.Do(func() {
			c.mu.Lock()
			c.live--
			c.mu.Unlock()
			first = true
		})
		return first
	}
	// c is done when its parent is (and registering with c itself would
	// come back here).
	stopAfter := context.AfterFunc(c.Context, func() {
		if settle() {
			f()
		}
	})
	return func() bool {
		stopAfter()
		return settle()
	}
}

// counts is what registered with c: still live, and in all.
func (c *trackingCtx) counts() (live, total int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.live, c.total
}

// keepsContext is notRun for the strategies that do not declare
// Info.KeepsNoContext.
func keepsContext(h *harness) string {
	if !h.info.KeepsNoContext {
		return "Info.KeepsNoContext is false: the strategy may keep its calls' contexts"
	}
	return ""
}

// testKeepsNoContext checks a strategy's Info.KeepsNoContext: nothing it
// registers with a call's context (a derived statement timeout, a watch)
// is left registered once the call returns. The harness relies on it to
// keep a call context's Done channel open from one call to the next
// (loadgen's deadlines); a strategy that declared it and left a derived
// context behind would keep that context alive past its call. Acquire and
// Release are called with tracking contexts, the lock free, and, for a
// strategy that does not block, taken (Acquire's ErrNotAcquired path).
func testKeepsNoContext(t T, h *harness) {
	key := h.key(t)
	s := h.open(t, LongTTL, "A")
	other := h.peer(t, s, LongTTL, "B")
	parent, cancel := context.WithTimeout(context.Background(), acquireTimeout)
	defer cancel()
	registered := 0
	check := func(what string, c *trackingCtx) {
		t.Helper()
		live, total := c.counts()
		registered += total
		if live != 0 {
			t.Errorf("%s: %d of the %d functions and contexts registered with the call's context are still registered after it returned; want none (Info.KeepsNoContext)", what, live, total)
		}
	}
	for range 5 {
		ac := newTrackingCtx(parent)
		l, err := s.Acquire(ac, key)
		ac.close()
		if err != nil {
			t.Fatalf("Acquire of a free lock: %v", err)
		}
		check("Acquire", ac)
		if !strategies.Blocks(other) && !h.control() {
			bc := newTrackingCtx(parent)
			l2, err := other.Acquire(bc, key)
			bc.close()
			if l2 != nil {
				_ = l2.Release(context.Background())
			}
			if !errors.Is(err, strategies.ErrNotAcquired) {
				t.Errorf("Acquire of a held lock: %v; want ErrNotAcquired", err)
			}
			check("Acquire of a held lock", bc)
		}
		rc := newTrackingCtx(parent)
		err = l.Release(rc)
		rc.close()
		if err != nil {
			t.Errorf("Release: %v", err)
		}
		check("Release", rc)
	}
	t.Logf("%d registrations with the calls' contexts, all undone before the calls returned", registered)
}
