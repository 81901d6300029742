package loadgen

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/lockbench/lockbench/loadgen/store"
	"github.com/lockbench/lockbench/results"
	"github.com/lockbench/lockbench/strategies"
)

// InstanceConfig is what one instance (app server) is built from. It is
// JSON-encoded to start an instance process.
type InstanceConfig struct {
	ID       int
	Strategy string
	// Info is the strategy's registry entry, when the instance is built
	// in the process that looked it up (Run); an instance process looks
	// its Strategy up itself.
	Info     strategies.Info `json:"-"`
	Scenario Scenario
	Lock     strategies.Config
	// StoreArrive makes an instance process's store client an arrival
	// one (store.Client.Arrive): set for instances on agents when the run
	// asked for the sequenced store transport.
	StoreArrive bool `json:",omitempty"`
	// History makes the workers record their events for the run's
	// history (Options.History).
	History bool `json:",omitempty"`
	// asks, for an in-process instance of a run with a fault, is where
	// its workers report their acquires (FaultEnv.asks).
	asks *askBoard
}

// Instance is one app server: its own strategy object (so a mutex excludes
// only its own workers, as in production) and --workers workers taking
// deliveries from one queue, or, when a payment's deliveries are routed to
// distinct workers of one instance (more deliveries than instances), each
// from its own.
type Instance struct {
	cfg      InstanceConfig
	strategy strategies.Strategy
	store    store.Accessor
	// tx is the instance's own connection to the Postgres store, for a
	// transactional strategy (Info.Transactional); nil otherwise.
	tx interface {
		store.Transactor
		Close() error
	}
	// txKind is the transactional strategy's transaction
	// (Info.Transaction).
	txKind store.TxKind
	// broker is the strategy when it queues deliveries instead of taking
	// a lock (queue); nil otherwise.
	broker broker
	// asks is where the workers report their acquires for a fault's
	// designed strikes (askBoard); nil without, and for tx and broker.
	asks *askBoard
	// keepsNoContext is the strategy's Info.KeepsNoContext.
	keepsNoContext bool
	queue          chan Delivery   // shared by the workers; nil when routed
	queues         []chan Delivery // one per worker when routed
	// room is how the workers wake a dispatcher waiting for room in the
	// shared queue: once it has drained to half (waiting is set while the
	// dispatcher waits).
	room      chan struct{}
	waiting   atomic.Bool
	workers   []*worker
	wg        sync.WaitGroup
	drainOnce sync.Once
	stopOnce  sync.Once
	stopErr   error
	// outcomes is the acquire latency by outcome over the whole run, which
	// Swap (the collector alone) drains into.
	outcomes results.OutcomeSet
	// batch holds the values Swap takes from the workers' recorders (the
	// collector's alone).
	batch results.Batch
	// feed, when set before Start, is where the workers take their
	// deliveries instead of the queue (see feed).
	feed *feed
	// accountKeys[a] is account a's lock key, made once when the lock key
	// is the account and there are at most maxAccountKeys accounts: a
	// cycle then formats no key; nil otherwise.
	accountKeys []string
}

// maxAccountKeys bounds the accounts whose lock keys an instance makes up
// front: 65,536 (about 3 MB of keys).
const maxAccountKeys = 1 << 16

// minQueue is the least room an instance's shared delivery queue has: 16.
const minQueue = 16

// QueueDepth is the room of the delivery queue an instance's workers
// share: one delivery per worker, and at least minQueue, so that a small
// instance's workers do not find it empty and park. The depth is in no
// latency: an open loop's counts from the intended start, a closed loop's
// from when a worker takes the payment.
func QueueDepth(workers int) int { return max(workers, minQueue) }

// InstanceOwner is the owner an instance's strategy is given
// (strategies.Config.Owner): "instance-" and its id.
func InstanceOwner(id int) string { return "instance-" + strconv.Itoa(id) }

// NewInstance builds an instance's strategy and starts its workers.
func NewInstance(ctx context.Context, cfg InstanceConfig, acc store.Accessor) (*Instance, error) {
	lock := cfg.Lock
	lock.Owner = InstanceOwner(cfg.ID)
	lock.TTL = cfg.Scenario.TTL
	lock.AcquireTimeout, lock.Workers = cfg.Scenario.AcquireTimeout, cfg.Scenario.Workers
	info := cfg.Info
	if info.New == nil {
		var err error
		if info, err = strategies.Resolve(cfg.Strategy); err != nil {
			return nil, fmt.Errorf("loadgen: strategy %q: %w", cfg.Strategy, err)
		}
	}
	s, err := info.Open(ctx, lock)
	if err != nil {
		return nil, err
	}
	in := &Instance{cfg: cfg, strategy: s, store: acc, outcomes: results.NewOutcomeSet()}
	if sc := cfg.Scenario; sc.LockKey != "payment" && sc.Accounts <= maxAccountKeys {
		in.accountKeys = make([]string, sc.Accounts)
		for a := range in.accountKeys {
			in.accountKeys[a] = formatLockKey(sc.LockKey, 0, int32(a))
		}
	}
	in.keepsNoContext = info.KeepsNoContext
	if info.Transactional {
		// A transactional strategy's deliveries are transactions on the
		// Postgres store, over the instance's own connection (as an app
		// would have), at the strategy's endpoint: a partition of it cuts
		// them.
		if cfg.Scenario.Store != StorePostgres {
			_ = s.Close()
			return nil, usageErr("store", "%s runs each delivery as a transaction on the Postgres store; want --store postgres", cfg.Strategy)
		}
		tx, err := store.NewPostgres(ctx, lock.PostgresDSN)
		if err != nil {
			_ = s.Close()
			return nil, err
		}
		in.tx, in.txKind = tx, txKindOf(info.Transaction)
	}
	if b, ok := s.(broker); ok {
		in.broker = b
		// The broker keeps messages and the duplicate window over payment
		// ids across runs; the first instance of the run, built before
		// any other and before any delivery, starts it afresh.
		if r, ok := s.(resetter); ok && cfg.ID == 0 {
			if err := r.Reset(ctx); err != nil {
				_ = s.Close()
				return nil, err
			}
		}
	}
	if in.tx == nil && in.broker == nil {
		in.asks = cfg.asks
	}
	if cfg.Scenario.Deliveries > cfg.Scenario.Instances {
		for range cfg.Scenario.Workers {
			in.queues = append(in.queues, make(chan Delivery, 1))
		}
	} else {
		in.queue = make(chan Delivery, QueueDepth(cfg.Scenario.Workers))
		in.room = make(chan struct{}, 1)
	}
	for i := range cfg.Scenario.Workers {
		seed := uint64(cfg.Scenario.Seed)*1_000_003 + uint64(cfg.ID)*4099 + uint64(i)
		in.workers = append(in.workers, newWorker(in, rand.New(rand.NewPCG(seed, 7))))
	}
	return in, nil
}

// Start runs the workers until the queues are closed by Stop.
func (in *Instance) Start(ctx context.Context) {
	for i, w := range in.workers {
		queue := in.queue
		if in.queues != nil {
			queue = in.queues[i]
		}
		in.wg.Add(1)
		go func() {
			defer in.wg.Done()
			// The worker's own child of ctx, so that what registers with it
			// (the deadlines below) does not share ctx's mutex with the
			// other workers.
			wctx, cancel := context.WithCancel(ctx)
			defer cancel()
			cx := newCycleCtx(wctx, in.cfg.Scenario.AcquireTimeout, in.keepsNoContext)
			defer cx.acquire.close()
			defer cx.release.close()
			if f := in.feed; f != nil {
				select {
				case <-f.ready:
				case <-ctx.Done():
					return
				}
				var h hand
				for {
					d, ok := f.take(&h)
					if !ok {
						return
					}
					w.process(cx, d)
				}
			}
			for d := range queue {
				in.roomMade(queue)
				w.process(cx, d)
			}
		}()
	}
}

// Deliver queues d for d.Worker (any worker when routing is off), blocking
// while the worker (or every worker) is busy and its queue full.
func (in *Instance) Deliver(ctx context.Context, d Delivery) error {
	queue := in.queue
	if in.queues != nil {
		if d.Worker < 0 || int(d.Worker) >= len(in.queues) {
			return fmt.Errorf("loadgen: delivery of payment %d to worker %d; instance %d has %d", d.Payment, d.Worker, in.cfg.ID, len(in.queues))
		}
		queue = in.queues[d.Worker]
	}
	// A send alone first: a select with two cases locks both channels.
	select {
	case queue <- d:
		return nil
	default:
	}
	if in.queues == nil {
		return in.deliverWhenRoom(ctx, d)
	}
	// A worker's own queue is full. Let the workers that are ready run
	// first, once: those that finish take from the queue while the
	// dispatcher is runnable rather than parked, so that taking does not
	// wake it. If a place is free after that, no park either.
	runtime.Gosched()
	select {
	case queue <- d:
		return nil
	default:
	}
	select {
	case queue <- d:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// deliverWhenRoom queues d in the full shared queue once the workers have
// drained it to half. A send blocked on a full channel is woken by the
// first receive, so the dispatcher would wake (often a whole thread) for
// every delivery, and park again after one send; waiting for half the
// queue to be free, it wakes once per half a queue and fills it in one go.
func (in *Instance) deliverWhenRoom(ctx context.Context, d Delivery) error {
	for {
		// Announce the wait, then look again: a worker that took from the
		// queue before it could see the flag left room for this send.
		in.waiting.Store(true)
		select {
		case in.queue <- d:
			in.waiting.Store(false)
			return nil
		default:
		}
		select {
		case <-in.room:
		case <-ctx.Done():
			in.waiting.Store(false)
			return ctx.Err()
		}
		select {
		case in.queue <- d:
			return nil
		default: // taken by a stale wake-up: wait again
		}
	}
}

// roomMade wakes a dispatcher waiting for room (deliverWhenRoom) once the
// worker's take left queue half empty.
func (in *Instance) roomMade(queue chan Delivery) {
	if in.room == nil || !in.waiting.Load() || len(queue) > cap(queue)/2 {
		return
	}
	if in.waiting.CompareAndSwap(true, false) {
		select {
		case in.room <- struct{}{}:
		default:
		}
	}
}

// Drain closes the queue and waits for the workers to finish what they
// hold (and a broker strategy's queue to empty): the end of the load. Run
// takes its end time after it and before Stop, so that the measured span
// holds no teardown (a pooled client's Close takes 10 to 20 ms against a
// local Postgres, a fraction of a percent of a few seconds' rate).
// Draining twice, or after Stop, is harmless.
func (in *Instance) Drain() {
	in.drainOnce.Do(func() {
		if in.queue != nil {
			close(in.queue)
		}
		for _, q := range in.queues {
			close(q)
		}
		in.wg.Wait()
		if in.broker != nil {
			in.drain(context.Background())
		}
	})
}

// Stop drains the instance (Drain) and closes the strategy.
// Stopping twice is harmless.
func (in *Instance) Stop() error {
	in.stopOnce.Do(func() {
		in.Drain()
		in.stopErr = in.strategy.Close()
		if in.tx != nil {
			in.stopErr = errors.Join(in.stopErr, in.tx.Close())
		}
	})
	return in.stopErr
}

// Swap collects what the workers recorded since the last Swap, merged.
func (in *Instance) Swap(into results.PhaseSet) {
	in.Gather(into)
	in.batch.Record(into, in.outcomes)
}

// Gather moves what the workers recorded since the last Gather or Swap
// into the instance's batch, which it records into into only once it
// holds maxBatch values, so that each value is not a cache miss on its
// count ("Recording latency" in the package doc); Swap records the rest.
// Everything gathered between two Swaps is that interval's.
func (in *Instance) Gather(into results.PhaseSet) {
	for _, w := range in.workers {
		in.batch.Take(&w.rec)
		if in.batch.Len() >= maxBatch {
			in.batch.Record(into, in.outcomes)
		}
	}
}

// maxBatch is the most values Gather and Swap order and record at once: 8,192 (64
// KB, and as much again to order them in), so that a batch stays in the
// core's second-level cache when the workers record faster than a local
// server lets them (BenchmarkHarnessCeiling: a million and more cycles a
// second, a hundred thousand values a drain).
const maxBatch = 8192

// Outcomes returns the acquire latency by outcome drained so far (call it
// after the last Swap, from the collector's side).
func (in *Instance) Outcomes() results.OutcomeSet { return in.outcomes }

// Counts sums the workers' counters.
func (in *Instance) Counts() Snapshot {
	var s Snapshot
	for _, w := range in.workers {
		s.Add(w.c.Snapshot())
	}
	return s
}

// txKindOf is the store's name for a transactional strategy's transaction.
func txKindOf(t strategies.Transaction) store.TxKind {
	switch t {
	case strategies.TxRowLock:
		return store.TxRowLock
	case strategies.TxOptimistic:
		return store.TxOptimistic
	}
	return store.TxUniqueMarker
}
