package loadgen

import (
	"context"
	"math"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
)

// deadlines gives one worker's calls of one kind (acquire, or release) the
// context context.WithTimeout(parent, timeout) would give them, for a
// fraction of its cost: the calls come one at a time with growing
// deadlines, so one timer serves them all. A call's begin and end touch
// only the first cache line of its deadlines (TestDeadlinesHotLine). See
// "Call deadlines" in the package doc.
type deadlines struct {
	deadlinesState
	// Up to a whole number of cache lines: the allocator then starts a
	// deadlines on a line of its own (no header before an object under
	// 512 bytes), and no other worker's writes share its first.
	_ [(64 - unsafe.Sizeof(deadlinesState{})%64) % 64]byte
}

type deadlinesState struct {
	// What every call reads or writes, on the first cache line.
	timeout time.Duration
	// parentDeadline is the parent's deadline in nanoseconds since epoch,
	// math.MaxInt64 when it has none; parentDone is parent.Done(), nil
	// when the parent is never done.
	parentDeadline int64
	parentDone     <-chan struct{}
	// cur is the call under way, nil between calls.
	cur atomic.Pointer[callCtx]
	// keepDone: a call's end leaves Done's channel open for the next call
	// (see "Call deadlines" in the package doc).
	keepDone bool
	// flags holds three flags in one word, leaving the line room for
	// epoch. flagArmed: the timer will fire (or its function is about to
	// run) no later than cur's deadline, since deadlines grow.
	// flagCancelled: the parent is done, parentErr its error.
	// flagAsksDone: a call's Done was asked for; as the caller then asks
	// every call's (go-redis per command, the context package when it
	// derives one), begin makes the channel up front, where Done reads it
	// without synchronising.
	flags atomic.Uint32
	// epoch is the origin of the calls' deadlines, kept as nanoseconds
	// since it: an int64 is cheaper to compute and compare than a
	// time.Time, and keeps a call's context small.
	epoch time.Time

	parent context.Context
	// values is where the calls' Value looks up keys: parent, or the
	// context parent is context.WithoutCancel of (the same values; its
	// Value allocates on every lookup).
	values     context.Context
	stopParent func() bool

	mu        sync.Mutex // guards the timer, parentErr, and the calls' Done channels and funcs
	timer     *time.Timer
	parentErr error
}

// The flags of deadlines.flags.
const (
	flagArmed uint32 = 1 << iota
	flagCancelled
	flagAsksDone
)

// has reports whether flag f is set.
func (d *deadlines) has(f uint32) bool { return d.flags.Load()&f != 0 }

// newDeadlines returns the contexts of calls bounded by timeout, children
// of parent, their start times counted from epoch (a worker's clock
// anchor). Call close when done with it.
func newDeadlines(parent context.Context, timeout time.Duration, epoch time.Time) *deadlines {
	d := &deadlines{}
	d.deadlinesState = deadlinesState{parent: parent, values: parent, timeout: timeout, epoch: epoch, parentDone: parent.Done(), parentDeadline: math.MaxInt64}
	if dl, ok := parent.Deadline(); ok {
		d.parentDeadline = int64(dl.Sub(d.epoch))
	}
	if d.parentDone != nil {
		d.stopParent = context.AfterFunc(parent, d.parentCancelled)
	}
	return d
}

// begin makes c the context of a call starting at now, the caller's clock
// reading in nanoseconds since d's epoch (which saves taking another), and
// returns it. c is a new (zero) callCtx, or one of d's calls that ended
// (see reusable): it starts a new generation, so that nothing still
// holding the old one (the timer's fire) can cancel this call. The caller
// allocates c so that it can allocate the contexts of several calls at
// once. Pass it to end when the call returns, before the next begin.
func (d *deadlines) begin(c *callCtx, now int64) *callCtx {
	if c.d == nil {
		c.d = d
	} else if x := c.extras.Load(); x != nil {
		// The last call's, run or stopped at its end; a quiet one (see
		// end) serves again when this call needs extras.
		c.extras.Store(nil)
		if c.quiet {
			c.spare = x
		}
	}
	c.deadline.Store(min(now+int64(d.timeout), d.parentDeadline))
	if !d.keepDone || c.done == nil {
		c.done = nil
		if d.has(flagAsksDone) {
			c.done = make(chan struct{})
		}
	}
	c.ended = false
	// The next generation, live; after the fields above, which whoever
	// sees the generation then sees too.
	c.state.Store(c.state.Load()&^callStateMask + callGeneration)
	// Publish c before looking at armed and cancelled; fire and
	// parentCancelled set those before they look at cur. So either they
	// see c, or this sees their flag.
	d.cur.Store(c)
	select {
	case <-d.parentDone:
		// parentCancelled may not have run yet.
		d.parentCancelled()
	default:
	}
	if d.has(flagCancelled) {
		d.mu.Lock()
		err := d.parentErr
		d.mu.Unlock()
		c.cancel(err)
		return c
	}
	if !d.has(flagArmed) {
		d.mu.Lock()
		if !d.has(flagArmed) {
			d.arm(c.until())
		}
		d.mu.Unlock()
	}
	return c
}

// arm starts the timer; d.mu is held.
func (d *deadlines) arm(wait time.Duration) {
	if d.timer == nil {
		d.timer = time.AfterFunc(wait, d.fire)
	} else {
		d.timer.Reset(wait)
	}
	d.flags.Or(flagArmed)
}

// end ends the call of c: its context is done from now on (with keepDone,
// Done's channel stays open when nothing registered with the call is left
// and it was not cancelled before; the next begin of c reuses it).
func (d *deadlines) end(c *callCtx) {
	d.cur.CompareAndSwap(c, nil)
	c.quiet = d.keepDone && c.quietExtras()
	c.ended = c.finish(c.state.Load(), context.Canceled, !c.quiet)
}

// quietExtras reports whether nothing registered with c is left at its
// end: every AfterFunc function was stopped (a derived context stops its
// own when it is cancelled, as a strategy's statement timeout is before
// the call returns), and Done's channel, if any, is begin's.
func (c *callCtx) quietExtras() bool {
	x := c.extras.Load()
	if x == nil {
		return true
	}
	c.d.mu.Lock()
	defer c.d.mu.Unlock()
	if _, ok := x.done.Load().(chan struct{}); ok {
		return false
	}
	for i := range x.n {
		if *x.slot(i) != nil {
			return false
		}
	}
	return true
}

// fire runs when the timer does.
func (d *deadlines) fire() {
	d.mu.Lock()
	d.flags.And(^flagArmed)
	c := d.cur.Load()
	if c == nil {
		d.mu.Unlock()
		return // between calls: the next call arms it again
	}
	// The generation first: the deadline read after it is that
	// generation's or a later one's, and only that generation is
	// cancelled below.
	gen := c.state.Load()
	if wait := c.until(); wait > 0 {
		d.arm(wait) // armed for an earlier call that ended in time
		d.mu.Unlock()
		return
	}
	d.mu.Unlock()
	c.cancelGen(gen, context.DeadlineExceeded) // cancel may take d.mu
}

// parentCancelled cancels the call under way when the parent is done.
func (d *deadlines) parentCancelled() {
	d.mu.Lock()
	if d.parentErr == nil {
		d.parentErr = d.parent.Err()
	}
	err := d.parentErr
	d.mu.Unlock()
	d.flags.Or(flagCancelled)
	if c := d.cur.Load(); c != nil {
		c.cancel(err)
	}
}

// close stops the timer and the watch on the parent.
func (d *deadlines) close() {
	if d.stopParent != nil {
		d.stopParent()
	}
	d.mu.Lock()
	if d.timer != nil {
		d.timer.Stop()
	}
	d.flags.And(^flagArmed)
	d.mu.Unlock()
}
