package faults

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/lockbench/lockbench/loadgen"
	"github.com/lockbench/lockbench/loadgen/store"
	"github.com/lockbench/lockbench/strategies"
)

// watch is what a failover does with its caught holder, whatever the
// store that fails over: it keeps the holder inside its critical section
// for hold, records the second holder of its lock key, and holds any
// later one at its entry until the caught holder has written.
type watch struct {
	hold    time.Duration
	env     *loadgen.FaultEnv
	catcher *catcher

	wmu sync.Mutex
	// caught is the caught holder while it is inside; contended is closed
	// once a second holder of its lock key entered (watchContender), and
	// written once the caught holder has been let go and has written.
	caught    *store.EnterReq
	contended chan struct{}
	written   chan struct{}
	letGo     sync.Once
	seen      bool
	gated     bool // a third holder was held at its entry
}

// start sets the catcher, whose trap catches the holders want accepts.
func (f *watch) start(env *loadgen.FaultEnv, hold time.Duration, want func(store.EnterReq) bool) {
	f.env, f.hold = env, hold
	f.contended, f.written = make(chan struct{}), make(chan struct{})
	f.catcher = newCatcher(env, want, f.holdHolder)
}

// watchContender runs inside every Enter. It records the first holder of
// the caught holder's lock key that enters while the caught holder is
// inside (the lock granted twice), and holds any later one at its entry
// until the caught holder has written (cfg.hold at most). So the writes
// land in one order every run: the second holder's (from the same read as
// the caught holder's), then the caught holder's, with no third holder's
// newer token seen in between; a token handed out twice then reaches the
// store twice in a row, which the strict rule is there to refuse.
func (f *watch) watchContender(r store.EnterReq) {
	f.wmu.Lock()
	c := f.caught
	same := c != nil && r.LockKey == c.LockKey && r.Payment != c.Payment
	first := same && !f.seen
	if first {
		f.seen = true
		close(f.contended)
	}
	gate := same && !first
	announce := gate && !f.gated
	f.gated = f.gated || gate
	written := f.written
	f.wmu.Unlock()
	switch {
	case first:
		f.env.Event(fmt.Sprintf("a second holder entered lock key %s while the caught holder is inside: instance %d, payment %d, token %d",
			r.LockKey, r.Instance, r.Payment, r.Token))
	case gate:
		if announce {
			f.env.Event(fmt.Sprintf("a third holder of %s held at its entry until the caught holder has written: instance %d, payment %d, token %d",
				r.LockKey, r.Instance, r.Payment, r.Token))
		}
		t := time.NewTimer(f.hold)
		defer t.Stop()
		select {
		case <-written:
		case <-t.C:
		}
	}
}

// holdHolder runs inside the caught holder's Enter: it keeps the holder in
// its critical section for cfg.hold, by slowing that section (an in-process
// instance) or stopping its process (continued by Inject).
func (f *watch) holdHolder(r store.EnterReq) {
	how, _ := f.catcher.keep(r, f.hold)
	f.wmu.Lock()
	f.caught = &r
	f.wmu.Unlock()
	f.env.Event(fmt.Sprintf("holder caught inside its critical section with a lock no replica that can be promoted has (%s for %s, within its lock's validity): instance %d, key %s, payment %d, token %d",
		how, ms(f.hold), r.Instance, r.LockKey, r.Payment, r.Token))
}

// forget ends the caught holder's turn: later holders of its key are let
// in (watchContender) and no longer watched.
func (f *watch) forget() {
	f.letGo.Do(func() {
		f.wmu.Lock()
		f.caught = nil
		if f.written != nil { // nil: Setup failed before start
			close(f.written)
		}
		f.wmu.Unlock()
	})
}

// awaitContender keeps the caught holder inside until cfg.hold has passed
// since at or, for a stopped holder process, until a second holder of its
// lock key has been inside for afterContender, long enough to have
// written. A slowed in-process holder stays the whole cfg.hold.
func (f *watch) awaitContender(ctx context.Context, at time.Time) {
	stopped := f.catcher.holding()
	t := time.NewTimer(f.hold - time.Since(at))
	defer t.Stop()
	contended := f.contended
	if !stopped {
		contended = nil
	}
	select {
	case <-t.C:
	case <-ctx.Done():
	case <-contended:
		strategies.Sleep(ctx, min(afterContender, f.hold-time.Since(at)))
	}
}
