package loadgen

import (
	"context"
	"fmt"
	"math"
	"sync/atomic"
	"time"

	"github.com/lockbench/lockbench/loadgen/store"
	"github.com/lockbench/lockbench/strategies"
)

// criticalSections is the most critical sections a payment of the run has
// (store.Setup.Deliveries, which lets the memory store release a payment
// after that many): one per delivery, since a worker enters the store at
// most once per delivery it holds the lock for; and 0, no bound, for the
// queue (Info.Redelivers), whose deliveries process whatever message they
// take, and take a message again when the broker redelivers it.
func criticalSections(info strategies.Info, sc Scenario) int {
	if info.Redelivers {
		return 0
	}
	return sc.Deliveries
}

// OfferBatch is how many payments the dispatcher takes from the stream and
// announces to the store (store.Offerer) at a time: 1024. The Postgres
// store creates their rows with one COPY per batch, so a run's payments
// are created as it goes, a bounded batch ahead of the deliveries.
const OfferBatch = 1024

// batch is the payments of the stream the dispatcher has taken and offered
// and not yet delivered, with their targets.
type batch struct {
	payments []Payment
	targets  []Target // deliveries per payment, in order
	accounts []int32  // for Offer
	next     int      // the next payment to deliver
}

// fill takes the next n payments from wl and offers them to the store.
func (b *batch) fill(ctx context.Context, wl *Workload, k, n int, st store.Offerer) error {
	b.payments, b.targets, b.accounts, b.next = b.payments[:0], b.targets[:0], b.accounts[:0], 0
	for range n {
		p, t := wl.Next()
		b.payments = append(b.payments, p)
		b.targets = append(b.targets, t...)
		b.accounts = append(b.accounts, p.Account)
	}
	if st == nil || n == 0 {
		return nil
	}
	if err := st.Offer(ctx, b.payments[0].ID, b.accounts); err != nil {
		return err
	}
	if r, ok := st.(offerRecorder); ok {
		r.offered(b.payments)
	}
	return nil
}

// dispatch offers every payment to its target instances at its intended
// time (in a closed loop, none: Delivery.IntendedNs 0), until the run's
// payments or its duration are over, and returns how far it fell behind
// schedule at worst, and an error when the store could not take a batch of
// payments. See "Dispatch and feed" in the package doc.
func dispatch(ctx context.Context, sc Scenario, wl *Workload, st store.Offerer, insts []instance, env *FaultEnv, start time.Time) (time.Duration, error) {
	pacer := NewPacer(sc.Rate)
	var behind time.Duration
	// An open loop's times are readings of clk: nanoseconds since start.
	clk := clockAt(start)
	end := int64(math.MaxInt64)
	if sc.Duration > 0 {
		end = int64(sc.Warmup + sc.Duration)
	}
	loop := startLoopTimes(start, sc.Warmup, sc.Duration)
	defer loop.stop()
	bound, bounded := sc.PaymentBound()
	measureStart := int64(sc.Warmup)
	var timer *time.Timer
	var b batch
	offers := env.offerCounts()
	for i := 0; !bounded || i < bound; i++ {
		at, paced := pacer.Intended(i)
		var now int64
		if paced {
			if now = clk.now(); now > end {
				break
			}
		} else if loop.over.Load() {
			break
		}
		if b.next == len(b.payments) {
			n := OfferBatch
			if bounded {
				n = min(n, bound-i)
			}
			if err := b.fill(ctx, wl, sc.Deliveries, n, st); err != nil {
				if ctx.Err() != nil {
					return behind, nil // interrupted
				}
				return behind, fmt.Errorf("store offer: %w", err)
			}
		}
		p := b.payments[b.next]
		targets := b.targets[b.next*sc.Deliveries : (b.next+1)*sc.Deliveries]
		b.next++
		d := Delivery{Payment: p.ID, Account: p.Account, Amount: p.Amount, Record: loop.warm.Load()}
		if paced {
			intended := int64(at)
			if wait := time.Duration(intended - now); wait > 0 {
				if timer == nil {
					timer = time.NewTimer(wait)
				} else {
					timer.Reset(wait)
				}
				select {
				case <-ctx.Done():
					timer.Stop()
					return behind, nil
				case <-timer.C:
				}
			} else if -wait > behind {
				behind = -wait
			}
			d.IntendedNs, d.Record = clk.unixNano(intended), intended >= measureStart
		}
		sent := 0
		for _, t := range targets {
			d.Worker = int32(t.Worker)
			if insts[t.Instance].Deliver(ctx, d) != nil {
				break // the run is ending
			}
			sent++
		}
		// Offered once any delivery of it went out: an instance will
		// process it (a Ctrl-C between a payment's two deliveries had
		// left it processed but not offered, processed > payments).
		if sent > 0 {
			offers.offered.Add(1)
			if d.Record {
				offers.measured.Add(1)
			}
		}
		if sent < len(targets) {
			return behind, nil
		}
	}
	return behind, nil
}

// loopTimes tells a closed loop's dispatcher whether the warmup (warm)
// and the duration (over) are over, without a clock read per payment:
// timers set them at those moments.
type loopTimes struct {
	warm, over atomic.Bool
	timers     []*time.Timer
}

// startLoopTimes sets the flags' timers for a run that started at start
// (no duration: never over).
func startLoopTimes(start time.Time, warmup, duration time.Duration) *loopTimes {
	l := &loopTimes{}
	l.at(start.Add(warmup), &l.warm)
	if duration > 0 {
		l.at(start.Add(warmup+duration), &l.over)
	}
	return l
}

// at sets f at t (now, if t has passed).
func (l *loopTimes) at(t time.Time, f *atomic.Bool) {
	l.after(t, func() { f.Store(true) })
}

// after calls fn at t (now, if t has passed), unless stopped first.
func (l *loopTimes) after(t time.Time, fn func()) {
	wait := time.Until(t)
	if wait <= 0 {
		fn()
		return
	}
	l.timers = append(l.timers, time.AfterFunc(wait, fn))
}

// stop stops the timers.
func (l *loopTimes) stop() {
	for _, t := range l.timers {
		t.Stop()
	}
}
