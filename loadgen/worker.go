package loadgen

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"
	"unsafe"

	"github.com/lockbench/lockbench/loadgen/store"
	"github.com/lockbench/lockbench/results"
	"github.com/lockbench/lockbench/strategies"
)

// worker processes deliveries one at a time: acquire the lock, read,
// work, write, release. A lock cycle touches two cache lines of it
// (TestWorkerHotLines): the instance, the call contexts, the random source
// and the recorder's head on the first, the three counters on the second.
type worker struct {
	workerState
	// Up to a whole number of cache lines: the workers of an instance are
	// allocated one after another, and the allocator then starts each on
	// a line of its own (no header before an object under 512 bytes),
	// so that no count one worker makes takes a line from the core of
	// its neighbour.
	_ [(64 - unsafe.Sizeof(workerState{})%64) % 64]byte
}

type workerState struct {
	inst *Instance
	// calls are the call contexts of the worker's last cycle (cycleCalls).
	calls *[2]callCtx
	rng   *rand.Rand
	rec   results.Recorder
	c     Counters
	// id is the worker's number in its instance; hb, when the run keeps
	// a history, its events (after the hot lines: a cycle without a
	// history reads hb only).
	id int32
	hb *histBuf
}

// note records ev, one of the worker's events, when the run keeps a
// history.
func (w *worker) note(ev clientEvent) {
	ev.Instance, ev.Worker = int32(w.inst.cfg.ID), w.id
	w.hb.add(ev)
}

// lockKey names the lock guarding d: from the instance's table of account
// keys when it has one, else built in one allocation.
func (in *Instance) lockKey(d Delivery) string {
	if a := int(d.Account); a >= 0 && a < len(in.accountKeys) {
		return in.accountKeys[a]
	}
	return formatLockKey(in.cfg.Scenario.LockKey, d.Payment, d.Account)
}

// formatLockKey names the lock guarding payment p of account a under
// --lock-key mode.
func formatLockKey(mode string, p int64, a int32) string {
	var buf [32]byte
	var b []byte
	if mode == "payment" {
		b = strconv.AppendInt(append(buf[:0], "lockbench:pay:"...), p, 10)
	} else {
		b = strconv.AppendInt(append(buf[:0], "lockbench:acct:"...), int64(a), 10)
	}
	return string(b)
}

// cycleCtx are the contexts a worker's lock cycles derive theirs from: the
// run's (done when the run ends) and the same without its cancellation,
// for the calls that must finish anyway (release, and the store's Finish);
// and the deadlines of the acquire (a child of run) and of the release (of
// detached), each bounded by --acquire-timeout, both counting from the
// worker's clock's anchor.
type cycleCtx struct {
	run, detached    context.Context
	acquire, release *deadlines
	clock            clock
}

// newCycleCtx makes a worker's cycleCtx under run (and its uncancelled
// twin, context.WithoutCancel(run), for detached), its calls
// bounded by timeout; keepDone when the strategy keeps no call's context
// past the call (strategies.Info.KeepsNoContext, see deadlines). Close its
// deadlines when done.
func newCycleCtx(run context.Context, timeout time.Duration, keepDone bool) cycleCtx {
	c := newClock()
	detached := context.WithoutCancel(run)
	cx := cycleCtx{run: run, detached: detached, clock: c,
		acquire: newDeadlines(run, timeout, c.anchor), release: newDeadlines(detached, timeout, c.anchor)}
	cx.release.values = run // the same values, without WithoutCancel's allocation
	cx.acquire.keepDone, cx.release.keepDone = keepDone, keepDone
	return cx
}

// clock reads the time as nanoseconds since its anchor (an earlier
// time.Now): one clock read where time.Now makes two, and integer
// arithmetic where time.Time's Add and Sub branch on their encodings. Its
// wall time is anchor's plus the monotonic time since: Linux slews
// CLOCK_MONOTONIC with CLOCK_REALTIME, so the two part only when the wall
// clock is stepped, and a step within a payment would be in its latency
// either way.
type clock struct {
	anchor time.Time
	wall   int64 // anchor in Unix nanoseconds
}

func newClock() clock { return clockAt(time.Now()) }

// clockAt is the clock anchored at t.
func clockAt(t time.Time) clock { return clock{anchor: t, wall: t.UnixNano()} }

// now is the time in nanoseconds since the anchor.
func (c clock) now() int64 { return int64(time.Since(c.anchor)) }

// unixNano is now (a reading of c) in Unix nanoseconds.
func (c clock) unixNano(now int64) int64 { return c.wall + now }

// cycleCalls returns the two call contexts of a cycle (acquire, release):
// the last cycle's when both are reusable (nothing outside that cycle can
// still be waiting on them: the common case for a strategy that asks
// neither Done nor AfterFunc of them), else new ones, in one allocation.
// Reuse keeps them in the worker's cache and saves an allocation a cycle.
func (w *worker) cycleCalls() *[2]callCtx {
	if c := w.calls; c != nil && c[0].reusable() && c[1].reusable() {
		return c
	}
	w.calls = new([2]callCtx)
	return w.calls
}

// total is the latency of delivery d whose cycle ran from t0 to t3
// (readings of c): from its intended start, or in a closed loop from t0.
func (d Delivery) total(c clock, t0, t3 int64) time.Duration {
	if d.IntendedNs == 0 {
		return time.Duration(t3 - t0)
	}
	return time.Duration(c.unixNano(t3) - d.IntendedNs)
}

// process handles one delivery: acquire → read → work → write → release.
// The cycle's times are clock readings, one each. The start is the
// intended start, in wall-clock nanoseconds shared with the dispatcher.
func (w *worker) process(cx cycleCtx, d Delivery) {
	in := w.inst
	sc := &in.cfg.Scenario
	w.c.Deliveries.Add(1)
	key := in.lockKey(d)
	if in.tx != nil {
		w.transact(cx, d, key)
		return
	}
	if in.broker != nil {
		w.consume(cx, d, key)
		return
	}

	calls := w.cycleCalls()
	t0 := cx.clock.now()
	actx := cx.acquire.begin(&calls[0], t0)
	var ask *asking
	if in.asks != nil {
		ask = in.asks.ask(key, d.Payment, in.cfg.ID, w.id, cx.clock.unixNano(t0))
	}
	lease, attempts, err := strategies.AcquireRetry(actx, in.strategy, key, sc.Retry.Retry)
	cx.acquire.end(actx)
	t1 := time.Duration(cx.clock.now() - t0)
	var aerr string // the history's class of err, once: it reads contexts that may end meanwhile
	if err != nil && (ask != nil || w.hb != nil) {
		aerr = acquireErr(cx, actx, err)
	}
	if ask != nil {
		// The times and the answer of its history line.
		in.asks.done(ask, err == nil, aerr == "not_acquired", cx.clock.unixNano(t0)+int64(t1))
	}
	if w.hb != nil {
		ev := clientEvent{Kind: evAcquire, Payment: d.Payment, Account: d.Account, Key: key,
			Inv: cx.clock.unixNano(t0), Ret: cx.clock.unixNano(t0) + int64(t1), OK: err == nil, Err: aerr}
		if err == nil {
			ev.Token = lease.Token()
		}
		w.note(ev)
	}
	if err != nil {
		// A give-up still has an acquire time: how long it tried.
		w.gaveUp(cx, d, actx, err, t1)
		return
	}
	w.c.Acquired.Add(1)
	outcome := results.FirstTry
	if attempts > 1 || strategies.Waited(lease) {
		outcome = results.Waited
	}

	w.critical(cx, d, key, lease)
	t2 := cx.clock.now()

	// Release with a fresh bound: the run's ctx may be ending, and a lock
	// left behind would only expire by its TTL.
	rctx := cx.release.begin(&calls[1], t2)
	rerr := lease.Release(rctx)
	if rerr != nil && !errors.Is(rerr, strategies.ErrInterrupted) {
		w.c.Errors[classify(rerr)].Add(1)
	}
	cx.release.end(rctx)
	t3 := cx.clock.now()
	if w.hb != nil {
		w.noteRelease(cx, d, key, "release", t2, t3, rerr)
	}
	if d.Record {
		w.c.Measured.Add(1)
		w.rec.RecordCycleOutcome(outcome, t1, time.Duration(t2-t0)-t1, time.Duration(t3-t2), d.total(cx.clock, t0, t3))
	}
}

// noteRelease records a release (or a queue's ack) that ran from t2 to t3
// (clock readings) and returned err.
func (w *worker) noteRelease(cx cycleCtx, d Delivery, key, kind string, t2, t3 int64, err error) {
	ev := clientEvent{Kind: evRelease, Payment: d.Payment, Account: d.Account, Key: key,
		Inv: cx.clock.unixNano(t2), Ret: cx.clock.unixNano(t3), OK: err == nil}
	if kind == "ack" {
		ev.Kind = evAck
	}
	if err != nil {
		ev.Err = releaseErr(err)
	}
	w.note(ev)
}

// transact handles one delivery of a transactional strategy (pg-unique,
// pg-for-update, pg-optimistic): one transaction on the Postgres store,
// with no lock server. Its phases: acquire is the claim (the
// processed-marker insert or the row lock, with any wait for another
// transaction, and for an optimistic strategy every attempt whose version
// check failed), critical the work, the write and the commit; there is
// nothing to release. Inside the transaction the delivery also enters the
// store's critical-section bookkeeping (the fault hooks fire there, and
// overlaps are counted), and leaves it when the transaction is over.
func (w *worker) transact(cx cycleCtx, d Delivery, key string) {
	in := w.inst
	sc := &in.cfg.Scenario
	hold := sc.Hold.Sample(w.rng)
	// The claim may wait AcquireTimeout, the rest as long again after the
	// work. The bound is a timer, not a deadline: a slow order
	// (EnterResp.Slow) lengthens the work once the transaction is under
	// way, and the bound with it.
	ctx, cancel := context.WithCancelCause(cx.run)
	defer cancel(nil)
	bound := time.AfterFunc(2*sc.AcquireTimeout+hold, func() { cancel(context.DeadlineExceeded) })
	defer bound.Stop()
	t0 := time.Now()
	req := store.TxReq{Payment: d.Payment, Account: d.Account, Amount: d.Amount, Kind: in.txKind}
	if in.txKind == store.TxRowLock {
		req.LockTimeout = sc.AcquireTimeout
	}
	var (
		t1, t2  time.Time
		txr     store.TxResp
		err     error
		backoff = strategies.DefaultRetryBase
	)
	for {
		t1, txr, err = w.txAttempt(cx, ctx, d, key, req, hold, bound)
		t2 = time.Now()
		if err != nil || !txr.Conflict {
			break
		}
		// The version check failed: another delivery updated the account
		// since this one read it. Try again, jittered as lock retries are,
		// while the acquire timeout lasts.
		w.c.Conflicts.Add(1)
		sleep := time.Duration(w.rng.Int64N(int64(backoff)) + 1)
		backoff = min(2*backoff, strategies.DefaultRetryCap)
		if t2.Add(sleep).Sub(t0) >= sc.AcquireTimeout {
			w.c.NotAcquired.Add(1)
			if d.Record {
				w.rec.Record(results.Acquire, t2.Sub(t0))
				w.rec.RecordOutcome(results.GaveUp, t2.Sub(t0))
			}
			return
		}
		t := time.NewTimer(sleep)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return // the run is ending
		}
	}
	claimed := !t1.IsZero()
	if !claimed {
		t1 = t2
	}
	switch {
	case err == nil:
		w.c.Acquired.Add(1)
		if d.Record {
			// A claim that waited on another transaction is not told
			// apart: every claim counts as a first try.
			w.rec.RecordOutcome(results.FirstTry, t1.Sub(t0))
		}
	case cx.run.Err() != nil:
		// The run is ending: neither a give-up nor a server error.
		return
	case !claimed && (ctx.Err() != nil || errors.Is(err, store.ErrLockTimeout)):
		// Waited on the marker or the row past the acquire timeout.
		w.c.NotAcquired.Add(1)
		if d.Record {
			w.rec.Record(results.Acquire, t1.Sub(t0))
			w.rec.RecordOutcome(results.GaveUp, t1.Sub(t0))
		}
		return
	case errors.Is(err, errStore):
		w.c.Errors[ecStore].Add(1)
		return
	default:
		// The bound's cancel cause makes an error it caused a timeout.
		w.c.Errors[classify(errors.Join(err, context.Cause(ctx)))].Add(1)
		return
	}
	if d.Record {
		w.c.Measured.Add(1)
		total := t2.Sub(t0)
		if d.IntendedNs != 0 {
			total = time.Duration(t2.UnixNano() - d.IntendedNs)
		}
		w.rec.RecordCycle(t1.Sub(t0), t2.Sub(t1), 0, total)
	}
}

// txAttempt runs one transaction of transact's delivery and notes it in
// the history. claim is when the transaction claimed the payment (it
// entered the store's bookkeeping and did the work), zero when it did not.
func (w *worker) txAttempt(cx cycleCtx, ctx context.Context, d Delivery, key string, req store.TxReq, hold time.Duration, bound *time.Timer) (claim time.Time, txr store.TxResp, err error) {
	in := w.inst
	sc := &in.cfg.Scenario
	begin := time.Now()
	entered := false
	var entry int64 // the store's entry number for this delivery's Enter
	leave := func() {
		entered = false
		if _, ferr := in.store.Finish(cx.detached, store.FinishReq{LockKey: key, Payment: d.Payment, Account: d.Account, Entry: entry}); ferr != nil {
			w.c.Errors[ecStore].Add(1)
		}
	}
	req.Leave = func() {
		if entered {
			leave()
		}
	}
	txr, err = in.tx.Process(ctx, req, func(ctx context.Context) error {
		claim = time.Now()
		read, err := in.store.Enter(ctx, store.EnterReq{LockKey: key, Payment: d.Payment, Account: d.Account, Instance: in.cfg.ID, Worker: w.id, Waiting: true})
		if err != nil {
			return fmt.Errorf("%w: %w", errStore, err)
		}
		entered, entry = true, read.Entry
		if read.Slow > 0 {
			hold = read.Slow
			bound.Reset(sc.AcquireTimeout + hold)
		}
		if hold > 0 {
			t := time.NewTimer(hold)
			defer t.Stop()
			select {
			case <-t.C:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return nil
	})
	end := time.Now()
	if entered {
		// The store must see every delivery that entered leave, whatever
		// happened to its transaction: one that did not reach its commit
		// leaves here.
		leave()
	}
	if w.hb != nil {
		ok := err == nil && !txr.Conflict
		// A failed COMMIT may have committed: the history says so, with
		// what the transaction would have done.
		unknown := errors.Is(err, store.ErrOutcomeUnknown)
		ev := clientEvent{Kind: evTx, Payment: d.Payment, Account: d.Account, Key: key,
			Inv: begin.UnixNano(), Ret: end.UnixNano(), OK: ok, Unknown: unknown,
			Claimed: (ok || unknown) && txr.Claimed, Debited: (ok || unknown) && txr.Debited, Conflict: txr.Conflict}
		if !claim.IsZero() {
			ev.Claim = claim.UnixNano()
		}
		w.note(ev)
	}
	return claim, txr, err
}

// errStore marks a failure of the store's bookkeeping call inside a
// transaction, counted as a store error.
var errStore = errors.New("loadgen: store call failed")

// critical is the work under the lock: read "processed?" and the balance,
// do the work (--hold), then debit or decline and mark processed — with the
// fencing token, which the store checks when fencing is on.
func (w *worker) critical(cx cycleCtx, d Delivery, key string, lease strategies.Lease) {
	in := w.inst
	ctx := cx.run
	token := lease.Token()
	read, err := in.store.Enter(ctx, store.EnterReq{LockKey: key, Token: token, Payment: d.Payment, Account: d.Account, Instance: in.cfg.ID, Worker: w.id, Waiting: true})
	if err != nil {
		w.c.Errors[ecStore].Add(1)
		return
	}
	hold := in.cfg.Scenario.Hold.Sample(w.rng)
	if read.Slow > 0 {
		hold = read.Slow
	}
	if hold > 0 {
		t := time.NewTimer(hold)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
	}
	fin := store.FinishReq{LockKey: key, Token: token, Payment: d.Payment, Account: d.Account}
	if read.Deferred {
		// The coordinator knows the read and computes the write.
		fin.Deferred, fin.Slot, fin.Amount = true, read.Slot, d.Amount
	} else {
		fin = store.WriteFor(fin, read, d.Amount)
	}
	// Finish even when ctx is done: the store must see every holder leave.
	// (A store reached over a connection bounds the call itself.)
	if _, err := in.store.Finish(cx.detached, fin); err != nil {
		w.c.Errors[ecStore].Add(1)
	}
}

// newWorker returns a worker of in drawing from rng.
func newWorker(in *Instance, rng *rand.Rand) *worker {
	w := &worker{}
	w.inst, w.rng = in, rng
	if in != nil {
		w.id = int32(len(in.workers))
		if in.cfg.History {
			w.hb = &histBuf{}
		}
	}
	return w
}
