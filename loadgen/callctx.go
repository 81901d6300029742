package loadgen

import (
	"context"
	"sync/atomic"
	"time"
)

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
