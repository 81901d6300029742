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
// fraction of its cost.
//
// Why not WithTimeout: each call starts and stops a runtime timer and
// registers and unregisters its context with the parent's, about 1 µs of
// CPU on the 2-core development VM, and a lock cycle makes two, which was a
// third of the harness's CPU per cycle. Here the calls of one deadlines
// come one at a time, each starting later than the one before, so their
// deadlines only grow and one timer serves them all: armed for the first
// call, it is left running when a call ends; when it fires it cancels the
// call under way if that call's deadline has passed, re-arms for the call's
// deadline if not, and stays stopped between calls. It fires about once
// per timeout (5 s by default), not once per call; a call in the common
// case costs a small allocation and three atomic operations.
//
// A call's context is done at its deadline (context.DeadlineExceeded), when
// the parent is done (the parent's error), or when the call ends
// (context.Canceled, as WithTimeout's cancel does, for anything the call
// left running). Contexts derived from it register with it through its
// AfterFunc method, as they would with one of the context package's,
// without a goroutine each.
//
// With keepDone (a strategy whose client uses a call's context only while
// the call runs: strategies.Info.KeepsNoContext), a call's end does not
// close Done's channel: a worker's call context, channel and all, serves
// its next call, and the channel is closed only when a call is cancelled
// (its deadline, the parent's end) or ends with a function still
// registered with it (a derived context not cancelled by then).
// go-redis asks every command's Done (a look before it takes a
// connection), so without this each call made a channel and a context on
// fresh memory: 0.2 µs a cycle in BenchmarkCallContext, more under a real
// client's cache pressure.
//
// A call's begin and end, and the lock client's look at its deadline, read
// and write only the first cache line of its deadlines (TestDeadlinesHotLine):
// between two calls of a worker the other workers and the lock client
// evict it, and each line a call touches is a cache miss.
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
	// (see above).
	keepDone bool
	// flags holds three flags (one word, so that the line above keeps
	// room for epoch). flagArmed is set while the timer will fire (or
	// its function is about to run): at a time no later than cur's
	// deadline, since deadlines grow. flagCancelled is set once the
	// parent is done, parentErr then its error. flagAsksDone is set once
	// a call's Done was asked for: the caller asks every call (go-redis
	// does, per command, and the context package when it derives a
	// context), so from then on begin makes the channel up front, where
	// Done reads it without synchronising.
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

// callCtx is the context of one call (deadlines.begin), and of the next
// calls of the same kind of its worker while it is reusable.
type callCtx struct {
	d *deadlines
	// deadline is in nanoseconds since d.epoch.
	deadline atomic.Int64
	// state is the call's generation (callGeneration and up, one more
	// each begin) plus why it is done (one of the call states, in
	// callStateMask), set once per generation.
	state atomic.Uint32
	// done, when not nil, is Done's channel, made by begin (flagAsksDone) and
	// not changed until the next begin; else Done makes one in extras.
	done chan struct{}
	// ended is set by end when it made the call done itself: no
	// cancellation (the timer's, the parent's) came first, which might
	// still be closing the channels and running the functions of this
	// generation on another goroutine. Only such a call context is begun
	// again, and with keepDone, done is then still open. Only the worker
	// reads and writes it.
	ended bool
	// quiet is set by end (keepDone) when nothing registered with the call
	// was left (quietExtras): end then left done open, and its extras,
	// kept in spare, serve the next call that needs them. Worker-only.
	quiet bool
	spare *callExtras
	// extras holds the channel of a Done that begin did not make and
	// AfterFunc's functions, made on the first call of either (nolock's
	// Acquire calls neither); set under d.mu.
	extras atomic.Pointer[callExtras]
	// To 64 bytes (TestDeadlinesHotLine): a worker's two call contexts,
	// allocated together (cycleCalls), are then a cache line each, where
	// at 56 bytes they took two or three.
	_ [8]byte
}

// callExtras is what only some calls' contexts need: Done's channel, made
// on the first call of Done (pgx never asks for it, only registers with
// AfterFunc), and AfterFunc's functions.
type callExtras struct {
	done   atomic.Value // of chan struct{}; stored under d.mu
	closed bool         // done is closed; guarded by d.mu
	// funcs are AfterFunc's functions by registration, nil once stopped
	// or run; a call registers one or two (a strategy's statement
	// timeout, and each of its derived contexts), so the first two need
	// no slice. Guarded by d.mu.
	funcs [2]func()
	more  []func()
	n     int
}

// slot is where AfterFunc's i-th function is.
func (x *callExtras) slot(i int) *func() {
	if i < len(x.funcs) {
		return &x.funcs[i]
	}
	return &x.more[i-len(x.funcs)]
}

// The states of a callCtx, in its state's low bits.
const (
	callLive = iota
	callCanceled
	callExpired

	callStateMask  = 3
	callGeneration = 4 // one generation in state
)

// reusable reports whether c, made by this worker's goroutine, can be
// begun again for its next call: never begun, or ended by its end (not
// cancelled before) without anyone having registered an AfterFunc or
// (unless keepDone) asked for its Done channel, so that nothing outside
// the call can still be waiting on it or be about to cancel it.
func (c *callCtx) reusable() bool {
	if c.d == nil {
		return true
	}
	if c.d.keepDone {
		return c.ended && c.quiet
	}
	return c.ended && c.done == nil && c.extras.Load() == nil
}

var _ context.Context = (*callCtx)(nil)

// Deadline returns the call's deadline.
func (c *callCtx) Deadline() (time.Time, bool) {
	return c.d.epoch.Add(time.Duration(c.deadline.Load())), true
}

// until is the time left until the deadline.
func (c *callCtx) until() time.Duration {
	return time.Duration(c.deadline.Load()) - time.Since(c.d.epoch)
}

// Done is closed when the call's context is done.
func (c *callCtx) Done() <-chan struct{} {
	if c.done != nil {
		return c.done
	}
	if !c.d.has(flagAsksDone) {
		c.d.flags.Or(flagAsksDone)
	}
	if x := c.extras.Load(); x != nil {
		if ch, ok := x.done.Load().(chan struct{}); ok {
			return ch
		}
	}
	c.d.mu.Lock()
	defer c.d.mu.Unlock()
	x := c.extrasLocked()
	ch, ok := x.done.Load().(chan struct{})
	if !ok {
		ch = make(chan struct{})
		x.done.Store(ch)
		// After publishing extras and ch; cancel sets state before it
		// looks for extras, and closes ch under d.mu. So either cancel
		// closes ch, or it is closed here.
		if c.state.Load()&callStateMask != callLive {
			close(ch)
			x.closed = true
		}
	}
	return ch
}

// extrasLocked returns c's extras, making them (or taking the spare a
// quiet call left: its functions all stopped, its Done never made); d.mu
// is held.
func (c *callCtx) extrasLocked() *callExtras {
	x := c.extras.Load()
	if x == nil {
		if x = c.spare; x != nil {
			c.spare = nil
			x.funcs = [2]func(){}
			x.more = x.more[:0]
			x.n = 0
		} else {
			x = &callExtras{}
		}
		c.extras.Store(x)
	}
	return x
}

// Err returns nil until the context is done, then why.
func (c *callCtx) Err() error {
	switch c.state.Load() & callStateMask {
	case callCanceled:
		return context.Canceled
	case callExpired:
		return context.DeadlineExceeded
	}
	return nil
}

// Value returns the parent's value for key, but for the context package's
// own key (cancelCtxKey) while the call is live: nil, the answer that
// asking the parent would come to anyway (its cancelCtx is not this
// context's, whose Done differs), without walking the parent's chain,
// which every context derived from the call asks for (a statement's
// timeout, twice a cycle) and which through a context.WithoutCancel
// allocates each time. Once the call is done the parent answers, so that
// context.Cause finds the parent's cause when the parent ended the call.
func (c *callCtx) Value(key any) any {
	switch {
	case key != cancelCtxKey:
		return c.d.values.Value(key)
	case c.state.Load()&callStateMask == callLive:
		return nil
	}
	return c.d.parent.Value(key)
}

// cancelCtxKey is the key the context package's own contexts answer with
// their cancelCtx (context.Cause asks a done context for it; that is how
// it is found here, once); nil if that ever changes, which leaves Value
// asking the parent for every key.
var cancelCtxKey = func() any {
	done, cancel := context.WithCancel(context.Background())
	cancel()
	p := &keyProbe{Context: done}
	_ = context.Cause(p)
	return p.key
}()

// keyProbe records the first key it is asked for.
type keyProbe struct {
	context.Context
	key any
}

func (p *keyProbe) Value(key any) any {
	if p.key == nil {
		p.key = key
	}
	return nil
}

// AfterFunc arranges to call f in its own goroutine once c is done, and
// returns a function that stops that, reporting whether it did. The context
// package finds it by this signature: a context derived from c (a
// statement's timeout inside a strategy, pgx's watch on a query) registers
// through it instead of starting a goroutine to wait for Done.
func (c *callCtx) AfterFunc(f func()) (stop func() bool) {
	c.d.mu.Lock()
	defer c.d.mu.Unlock()
	x := c.extrasLocked() // before looking at state: see Done
	if c.state.Load()&callStateMask != callLive {
		go f()
		return func() bool { return false }
	}
	i := x.n
	x.n++
	if i >= len(x.funcs) {
		x.more = append(x.more, nil)
	}
	*x.slot(i) = f
	gen := c.state.Load() &^ callStateMask
	return func() bool {
		c.d.mu.Lock()
		defer c.d.mu.Unlock()
		// x may serve a later call of c (a quiet end's spare): a stop
		// left from this one must not touch that call's functions.
		if c.state.Load()&^callStateMask != gen {
			return false
		}
		s := x.slot(i)
		if *s == nil {
			return false
		}
		*s = nil
		return true
	}
}

// cancel makes c done with err (context.Canceled or
// context.DeadlineExceeded), unless it is done already.
func (c *callCtx) cancel(err error) { c.cancelGen(c.state.Load(), err) }

// cancelGen is cancel for the call of generation gen (a state read
// earlier): nothing once c has been begun again.
func (c *callCtx) cancelGen(gen uint32, err error) { c.finish(gen, err, true) }

// finish makes the call of generation gen done with err, closing done when
// closeDone is set, and reports whether it did (false: that generation was
// done already, or is over).
func (c *callCtx) finish(gen uint32, err error, closeDone bool) bool {
	state := uint32(callCanceled)
	if err == context.DeadlineExceeded {
		state = callExpired
	}
	gen &^= callStateMask
	if !c.state.CompareAndSwap(gen|callLive, gen|state) {
		return false
	}
	if c.done != nil && closeDone {
		close(c.done)
	}
	if c.extras.Load() == nil {
		return true // Done and AfterFunc will see state
	}
	c.d.mu.Lock()
	x := c.extras.Load()
	if ch, ok := x.done.Load().(chan struct{}); ok && !x.closed {
		close(ch)
		x.closed = true
	}
	var funcs []func()
	for i := range x.n {
		if s := x.slot(i); *s != nil {
			funcs = append(funcs, *s)
			*s = nil
		}
	}
	c.d.mu.Unlock()
	for _, f := range funcs {
		go f()
	}
	return true
}
