package loadgen

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/lockbench/lockbench/loadgen/store"
)

// feed hands a closed loop's payments to the workers of a run's only
// instance, which take them themselves, a few at a time, instead of from a
// dispatcher through the instance's queue (dispatch). The workers record
// what they would behind a dispatcher. See "Dispatch and feed" in the
// package doc.
type feed struct {
	feedState
	// Up to a whole number of cache lines: a feed's size class is then a
	// multiple of 64 bytes, and the allocator puts no header before an
	// object under 512 bytes, so that the line below starts one.
	_ [(64 - unsafe.Sizeof(feedState{})%64) % 64]byte
}

type feedState struct {
	// What every refill writes, on the feed's first cache line
	// (TestFeedHotLine): the lock, the cursor, the counts of the
	// payments offered (taken) and measured (FaultEnv.offerCounts).
	mu     sync.Mutex
	next   int       // the next payment of cur
	cur    []Payment // the batch's payments (b.payments)
	offers offerCounts
	_      [8]byte // to the line's end

	// halt is what a take looks at, on the feed's second line, which
	// refills do not write: set, by end alone, once the workers are to
	// start nothing more, not even what their hands hold: the load's
	// duration is up, ctx is done, or a store offer failed. A load that
	// ended at its payment bound leaves the hands theirs, all within it.
	// One flag on a line a take reads anyway.
	halt atomic.Bool

	// Set by open, before ready is closed, and read by refills.
	ctx     context.Context
	wl      *Workload
	st      store.Offerer
	loop    *loopTimes
	bound   int
	bounded bool
	// over is set, and done closed, by end: the one place the load is
	// decided over (the payment bound taken, the duration up, the run's
	// end, a store error: err). Whatever stops a worker has called it
	// first, so that no worker's exit can leave the load running.
	over bool
	err  error
	// b is the batch the payments come from.
	b batch
	// ready is closed by open: the workers take nothing before.
	ready chan struct{}
	done  chan struct{}
}

// pullFeed returns the feed for a run whose only instance's workers can
// take its payments themselves (see feed), else nil.
func pullFeed(sc Scenario, insts []instance, st store.Store, sequenced bool) (*Instance, *feed) {
	if len(insts) != 1 || sc.Rate != 0 || sc.Deliveries != 1 || sequenced {
		return nil, nil
	}
	in, ok := insts[0].(*Instance)
	if !ok || in.queue == nil || in.broker != nil || in.tx != nil {
		return nil, nil
	}
	if _, ok := st.(*store.Memory); !ok {
		return nil, nil
	}
	return in, newFeed()
}

// newFeed returns a feed for open to start.
func newFeed() *feed {
	f := &feed{}
	f.ready, f.done = make(chan struct{}), make(chan struct{})
	return f
}

// open starts the feed for a run that started at start, and returns when
// the load is over (the workers may still be finishing their last
// payments: Instance.Drain waits for them), with the error that ended it
// if one did.
//
// The duration's end and ctx's end each end the load themselves (end),
// whatever the workers are doing: a worker that next takes sees halt,
// gives back its hand and stops.
func (f *feed) open(ctx context.Context, sc Scenario, wl *Workload, st store.Offerer, start time.Time) error {
	f.ctx, f.wl, f.st = ctx, wl, st
	f.bound, f.bounded = sc.PaymentBound()
	f.loop = startLoopTimes(start, sc.Warmup, 0) // the warmup's end
	defer f.loop.stop()
	if sc.Duration > 0 {
		f.loop.after(start.Add(sc.Warmup+sc.Duration), f.stop)
	}
	// Also after open returns (a bounded load's last payments, a
	// drain): the run's end cancels ctx, which unregisters it.
	context.AfterFunc(ctx, f.stop)
	close(f.ready)
	select {
	case <-f.done:
	case <-ctx.Done():
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

// stop ends the load and halts the workers, hands and all: the duration
// is up or ctx is done.
func (f *feed) stop() {
	f.mu.Lock()
	f.end(nil, true)
	f.mu.Unlock()
}

// feedChunk is how many payments a worker takes from the feed at once:
// 4. Each take moves the feed's line between the cores of a small machine
// and holds its mutex; a worker that takes four at a time does so a
// quarter as often. What it has taken and not yet started when the load
// ends it gives back (hand), so that the payments offered are still those
// started, as with one at a time.
const feedChunk = 4

// hand is what a worker has taken from the feed: deliveries next to n,
// not yet started. A worker's own, on its goroutine's stack.
type hand struct {
	ds      [feedChunk]Delivery
	next, n int
}

// take returns the next payment's delivery for the worker whose hand is h,
// or false once the load is over.
func (f *feed) take(h *hand) (Delivery, bool) {
	if h.next == h.n {
		return f.refill(h)
	}
	if f.halt.Load() {
		f.giveBack(h)
		return Delivery{}, false
	}
	d := h.ds[h.next]
	h.next++
	return d, true
}

// refill takes up to feedChunk payments into the empty hand h and returns
// the first, or false once the load is over.
func (f *feed) refill(h *hand) (Delivery, bool) {
	f.mu.Lock()
	if f.over || f.ctx.Err() != nil {
		// ctx's end ends the load by itself too (stop), a moment later.
		f.end(nil, f.ctx.Err() != nil)
		f.mu.Unlock()
		return Delivery{}, false
	}
	taken := int(f.offers.offered.Load()) // written under f.mu only
	if f.next == len(f.cur) {
		n := OfferBatch
		if f.bounded {
			n = min(n, f.bound-taken)
		}
		if err := f.b.fill(f.ctx, f.wl, 1, n, f.st); err != nil {
			if f.ctx.Err() != nil {
				err = nil // interrupted
			}
			f.end(err, true)
			f.mu.Unlock()
			return Delivery{}, false
		}
		f.cur, f.next = f.b.payments, 0
	}
	// Within the batch: a bounded run's batch holds no more than the
	// bound leaves.
	ps := f.cur[f.next:min(f.next+feedChunk, len(f.cur))]
	f.next += len(ps)
	record := f.loop.warm.Load()
	for i, p := range ps {
		h.ds[i] = Delivery{Payment: p.ID, Account: p.Account, Amount: p.Amount, Record: record, Worker: -1}
	}
	h.next, h.n = 1, len(ps)
	f.offers.offered.Add(int64(len(ps)))
	if record {
		f.offers.measured.Add(int64(len(ps)))
	}
	if f.bounded && taken+len(ps) >= f.bound {
		f.end(nil, false) // the last payment taken; the hands go on
	}
	f.mu.Unlock()
	return h.ds[0], true
}

// giveBack returns what h holds to the feed when the load is over: those
// payments were never started, and count as neither offered nor measured.
func (f *feed) giveBack(h *hand) {
	left := h.ds[h.next:h.n]
	h.next = h.n
	if len(left) == 0 {
		return
	}
	measured := 0
	if left[0].Record { // one refill's, all alike
		measured = len(left)
	}
	f.mu.Lock()
	f.offers.offered.Add(-int64(len(left)))
	f.offers.measured.Add(-int64(measured))
	f.mu.Unlock()
}

// end marks the load over, with err (store offer failed) if not nil, and
// halts the workers, hands and all, if halt or err; f.mu is held. The
// only place over, halt and done are set.
func (f *feed) end(err error, halt bool) {
	if err != nil && f.err == nil {
		f.err = fmt.Errorf("store offer: %w", err)
	}
	if halt || err != nil {
		f.halt.Store(true)
	}
	if !f.over {
		f.over = true
		close(f.done)
	}
}
