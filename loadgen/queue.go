package loadgen

import (
	"context"
	"errors"
	"time"

	"github.com/lockbench/lockbench/results"
	"github.com/lockbench/lockbench/strategies"
)

// broker is implemented by a strategy that takes no lock but queues the
// deliveries (queue): a delivery publishes its payment, and the delivery
// whose publish the broker kept takes the next message of its key's shard
// and processes the payment that message carries.
type broker interface {
	// Enqueue publishes one delivery of a payment on key's shard and
	// reports whether the broker kept it (false: dropped as a duplicate).
	Enqueue(ctx context.Context, key string, payment int64, account int32, amount int64) (bool, error)
	// Next waits for the next message of key's shard, until ctx is done,
	// and returns the lease on it: Release acknowledges it.
	Next(ctx context.Context, key string) (strategies.Lease, error)
}

// carrier is implemented by a broker's leases: the payment the message
// carries (ok false when it carries none).
type carrier interface {
	Carries() (payment int64, account int32, amount int64, ok bool)
}

// redelivery is implemented by a broker's leases: whether the broker had
// delivered the message before, to a consumer that did not acknowledge it
// within its ack deadline.
type redelivery interface {
	Redelivered() bool
}

// resetter is implemented by a strategy whose server keeps, across runs,
// state a new run must not see (the queue's stream: its messages and the
// duplicate window over payment ids that every run reuses). The first
// instance of a run calls Reset before any delivery is dispatched.
type resetter interface {
	Reset(ctx context.Context) error
}

// consume handles one delivery of a broker strategy: publish the payment;
// when the broker kept it, take the next message of the key's shard,
// process the payment it carries as a critical section (the message's
// delivery sequence is the fencing token), then acknowledge it. A publish
// dropped as a duplicate is a cycle of its own; each redelivery taken owes
// one more message. Phases: acquire is the publish and the wait, critical
// the processing, release the ack ("Broker deliveries" in the package doc).
func (w *worker) consume(cx cycleCtx, d Delivery, key string) {
	in := w.inst
	calls := w.cycleCalls()
	t0 := cx.clock.now()
	actx := cx.acquire.begin(&calls[0], t0)
	kept, err := in.broker.Enqueue(actx, key, d.Payment, d.Account, d.Amount)
	switch {
	case err != nil:
		cx.acquire.end(actx)
		w.gaveUp(cx, d, actx, err, time.Duration(cx.clock.now()-t0))
	case !kept:
		// Dropped as a duplicate: the broker has the payment already, and
		// this delivery's cycle ends with the publish, as a lock's
		// duplicate delivery ends with finding the payment processed.
		cx.acquire.end(actx)
		t1 := cx.clock.now()
		w.c.Acquired.Add(1)
		if d.Record {
			w.c.Measured.Add(1)
			// No critical or release phase: there was none.
			w.rec.Record(results.Acquire, time.Duration(t1-t0))
			w.rec.Record(results.Total, d.total(cx.clock, t0, t1))
			w.rec.RecordOutcome(results.FirstTry, time.Duration(t1-t0))
		}
	default:
		lease, err := in.broker.Next(actx, key)
		cx.acquire.end(actx)
		if err != nil {
			w.gaveUp(cx, d, actx, err, time.Duration(cx.clock.now()-t0))
			return
		}
		w.consumed(cx, d, lease, t0, calls, true)
	}
}

// consumed processes the message of lease, taken for delivery d whose
// cycle began at t0 (a reading of cx.clock), and, when owe is set, the
// ones d owes after a redelivery.
func (w *worker) consumed(cx cycleCtx, d Delivery, lease strategies.Lease, t0 int64, calls *[2]callCtx, owe bool) {
	in := w.inst
	t1 := time.Duration(cx.clock.now() - t0)
	for {
		w.c.Acquired.Add(1)
		p := d
		if c, ok := lease.(carrier); ok {
			if pay, acct, amount, ok := c.Carries(); ok {
				p.Payment, p.Account, p.Amount = pay, acct, amount
			}
		}
		again := false
		if r, ok := lease.(redelivery); ok && r.Redelivered() {
			w.c.Redeliveries.Add(1)
			again = true
		}
		if w.hb != nil {
			w.note(clientEvent{Kind: evMessage, Payment: p.Payment, Account: p.Account, Key: in.lockKey(p),
				Inv: cx.clock.unixNano(cx.clock.now()), Redelivery: again})
		}
		w.critical(cx, p, in.lockKey(p), lease)
		t2 := cx.clock.now()
		rctx := cx.release.begin(&calls[1], t2)
		rerr := lease.Release(rctx)
		if rerr != nil {
			w.c.Errors[classify(rerr)].Add(1)
		}
		cx.release.end(rctx)
		t3 := cx.clock.now()
		if w.hb != nil {
			w.noteRelease(cx, p, in.lockKey(p), "ack", t2, t3, rerr)
		}
		if d.Record {
			w.c.Measured.Add(1)
			w.rec.RecordCycleOutcome(results.FirstTry, t1, time.Duration(t2-t0)-t1, time.Duration(t3-t2), d.total(cx.clock, t0, t3))
		}
		if !again || !owe {
			return
		}
		// The message this delivery published is still in the shard.
		t0 = cx.clock.now()
		d.IntendedNs = 0 // its cycle starts now
		actx := cx.acquire.begin(&calls[0], t0)
		var err error
		lease, err = in.broker.Next(actx, d.key(in))
		cx.acquire.end(actx)
		t1 = time.Duration(cx.clock.now() - t0)
		if err != nil {
			// Nothing waiting (another worker took it) is no give-up.
			if cx.run.Err() == nil && actx.Err() == nil {
				w.c.Errors[classify(err)].Add(1)
			}
			return
		}
	}
}

// key is d's lock key at in.
func (d Delivery) key(in *Instance) string { return in.lockKey(d) }

// gaveUp counts a cycle that got no lease (or, for a broker, no message)
// after trying for tried.
func (w *worker) gaveUp(cx cycleCtx, d Delivery, actx context.Context, err error, tried time.Duration) {
	if d.Record {
		w.rec.Record(results.Acquire, tried)
	}
	switch {
	case cx.run.Err() != nil, errors.Is(err, strategies.ErrInterrupted):
		// The run is ending (its adapter stopped with lockbench, a moment
		// before lockbench's own context): neither a give-up nor a
		// server error.
	case errors.Is(err, strategies.ErrAdapterLost):
		// Whether or not its deadline has passed meanwhile: the adapter
		// failed, not the lock.
		w.c.Errors[ecAdapterLost].Add(1)
	case errors.Is(err, strategies.ErrNotAcquired),
		actx.Err() != nil && !errors.Is(err, strategies.ErrUnavailable):
		w.c.NotAcquired.Add(1)
		if d.Record {
			w.rec.RecordOutcome(results.GaveUp, tried)
		}
	default:
		w.c.Errors[classify(err)].Add(1)
	}
}

// drainer is implemented by a broker that can hand out the messages left
// in its shards (nil when none is left).
type drainer interface {
	Leftover(ctx context.Context) (strategies.Lease, error)
}

// maxLeftovers bounds the messages one drain processes: 100,000.
const maxLeftovers = 100_000

// drain processes, with the first worker's counters, the messages left in
// the broker once every instance has stopped (see drainer). The runner
// stops instances in order, so the last one drains; until it does, a
// leftover message would count as an unprocessed payment. It records no
// latency: the payment waited for the run's end.
func (in *Instance) drain(ctx context.Context) {
	d, ok := in.broker.(drainer)
	if !ok || len(in.workers) == 0 || in.cfg.ID != in.cfg.Scenario.Instances-1 {
		return
	}
	w := in.workers[0]
	timeout := in.cfg.Scenario.AcquireTimeout
	// A shard whose message in flight is never acked holds the rest back
	// until its ack deadline: the whole drain is bounded by one deadline
	// and one acquire timeout more.
	ctx, cancel := context.WithTimeout(ctx, max(timeout, in.cfg.Scenario.TTL)+timeout)
	defer cancel()
	cx := newCycleCtx(ctx, timeout, false)
	defer cx.acquire.close()
	defer cx.release.close()
	for range maxLeftovers {
		lctx, lcancel := context.WithTimeout(ctx, timeout)
		lease, err := d.Leftover(lctx)
		lcancel()
		if err != nil || lease == nil {
			return
		}
		w.consumed(cx, Delivery{}, lease, cx.clock.now(), new([2]callCtx), false)
	}
}
