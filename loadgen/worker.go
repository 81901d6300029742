package loadgen

import (
	"context"
	"errors"
	"math/rand/v2"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/lockbench/lockbench/loadgen/store"
	"github.com/lockbench/lockbench/results"
	"github.com/lockbench/lockbench/strategies"
)

// Delivery is one delivery of a payment to one instance.
type Delivery struct {
	Payment int64
	Account int32
	Amount  int64
	// IntendedNs is when the payment was meant to start (open loop) or was
	// dispatched (closed loop), in Unix nanoseconds: latency counts from it.
	IntendedNs int64
	// Record is false during the warmup.
	Record bool
}

// Counters are one worker's (or one instance's) counts. Workers update
// their own with atomics so progress can read them without stopping anyone.
type Counters struct {
	Deliveries  atomic.Int64 // deliveries handled (acquired or not)
	Acquired    atomic.Int64
	NotAcquired atomic.Int64
	// Measured counts lock cycles completed outside the warmup.
	Measured atomic.Int64
	Errors   [numErrClasses]atomic.Int64
}

// Snapshot is a plain copy of Counters, for sending and summing.
type Snapshot struct {
	Deliveries, Acquired, NotAcquired, Measured int64
	Errors                                      [numErrClasses]int64
}

// Snapshot copies c.
func (c *Counters) Snapshot() Snapshot {
	s := Snapshot{Deliveries: c.Deliveries.Load(), Acquired: c.Acquired.Load(), NotAcquired: c.NotAcquired.Load(), Measured: c.Measured.Load()}
	for i := range s.Errors {
		s.Errors[i] = c.Errors[i].Load()
	}
	return s
}

// Add adds o to s.
func (s *Snapshot) Add(o Snapshot) {
	s.Deliveries += o.Deliveries
	s.Acquired += o.Acquired
	s.NotAcquired += o.NotAcquired
	s.Measured += o.Measured
	for i := range s.Errors {
		s.Errors[i] += o.Errors[i]
	}
}

// ErrorMap returns the non-zero error classes by name.
func (s Snapshot) ErrorMap() map[string]int64 {
	m := map[string]int64{}
	for i, n := range s.Errors {
		if n > 0 {
			m[errClasses[i]] = n
		}
	}
	return m
}

// worker processes deliveries one at a time: the seed's ProcessWithLock.
type worker struct {
	inst *Instance
	rec  *results.Recorder
	rng  *rand.Rand
	c    Counters
}

// lockKey names the lock guarding d.
func (in *Instance) lockKey(d Delivery) string {
	if in.cfg.Scenario.LockKey == "payment" {
		return "lockbench:pay:" + strconv.FormatInt(d.Payment, 10)
	}
	return "lockbench:acct:" + strconv.FormatInt(int64(d.Account), 10)
}

// cycleCtx are the contexts a worker's lock cycles derive theirs from: the
// run's (done when the run ends) and the same without its cancellation,
// for the calls that must finish anyway (release, and the store's Finish).
type cycleCtx struct {
	run, detached context.Context
}

// process handles one delivery: acquire → read → work → write → release.
// Times are taken with time.Now (monotonic) except the start, which is the
// intended start in wall-clock nanoseconds shared with the dispatcher.
func (w *worker) process(cx cycleCtx, d Delivery) {
	in := w.inst
	sc := &in.cfg.Scenario
	ctx := cx.run
	w.c.Deliveries.Add(1)
	key := in.lockKey(d)

	t0 := time.Now()
	actx, cancel := context.WithTimeout(ctx, sc.AcquireTimeout)
	lease, _, err := strategies.AcquireRetry(actx, in.strategy, key, sc.Retry.Retry)
	cancel()
	t1 := time.Now()
	if err != nil {
		// A give-up still has an acquire time: how long it tried.
		if d.Record {
			w.rec.Record(results.Acquire, t1.Sub(t0))
		}
		switch {
		case ctx.Err() != nil:
			// The run is ending: neither a give-up nor a server error.
		case errors.Is(err, strategies.ErrNotAcquired),
			actx.Err() != nil && !errors.Is(err, strategies.ErrUnavailable):
			w.c.NotAcquired.Add(1)
		default:
			w.c.Errors[classify(err)].Add(1)
		}
		return
	}
	w.c.Acquired.Add(1)

	w.critical(cx, d, key, lease)
	t2 := time.Now()

	// Release with a fresh bound: the run's ctx may be ending, and a lock
	// left behind would only expire by its TTL.
	rctx, rcancel := context.WithTimeout(cx.detached, sc.AcquireTimeout)
	if err := lease.Release(rctx); err != nil {
		w.c.Errors[classify(err)].Add(1)
	}
	rcancel()
	t3 := time.Now()
	if d.Record {
		w.c.Measured.Add(1)
		w.rec.RecordCycle(t1.Sub(t0), t2.Sub(t1), t3.Sub(t2), time.Duration(t3.UnixNano()-d.IntendedNs))
	}
}

// critical is the work under the lock: read "processed?" and the balance,
// do the work (--hold), then debit or decline and mark processed — with the
// fencing token, which the store checks when fencing is on.
func (w *worker) critical(cx cycleCtx, d Delivery, key string, lease strategies.Lease) {
	in := w.inst
	ctx := cx.run
	token := lease.Token()
	read, err := in.store.Enter(ctx, store.EnterReq{LockKey: key, Token: token, Payment: d.Payment, Account: d.Account, Instance: in.cfg.ID})
	if err != nil {
		w.c.Errors[ecStore].Add(1)
		return
	}
	hold := in.cfg.Scenario.Hold.Sample(w.rng)
	if slow := in.slowOnce.Swap(0); slow > 0 {
		hold = time.Duration(slow)
	}
	if hold > 0 {
		t := time.NewTimer(hold)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
	}
	fin := store.FinishReq{LockKey: key, Token: token, Payment: d.Payment, Account: d.Account, Apply: !read.Processed, BaseVersion: read.Version}
	if fin.Apply {
		fin.NewBalance = read.Balance
		if read.Balance >= d.Amount {
			fin.Debit = d.Amount
			fin.NewBalance = read.Balance - d.Amount
		}
	}
	// Finish even when ctx is done: the store must see every holder leave.
	// (A store reached over a connection bounds the call itself.)
	if _, err := in.store.Finish(cx.detached, fin); err != nil {
		w.c.Errors[ecStore].Add(1)
	}
}
