package loadgen

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/lockbench/lockbench/loadgen/store"
	"github.com/lockbench/lockbench/results"
	"github.com/lockbench/lockbench/strategies"
)

// IntervalLength is the default length of one latency interval: 1 second
// (Scenario.Interval sets another per run).
const IntervalLength = time.Second

// Options are one run: one strategy through one scenario, with one fault.
type Options struct {
	// Strategy is the strategy's registry entry (strategies.Lookup).
	Strategy strategies.Info
	Scenario Scenario
	// Lock holds the servers' endpoints (TTL and Owner are set per instance).
	Lock strategies.Config
	// Store is the coordinator's store; it is Reset at the start.
	Store store.Store
	// Fault is injected during the run; nil for none.
	Fault Fault
	// Reporter, if set, hears the run as it goes: its intervals and
	// events (Reporter).
	Reporter Reporter
	// StreamIntervals: the run keeps none of its intervals, which go to
	// the Reporter alone (results.HlogStream.Write writes them to interval
	// logs as they come), so memory stays flat however long the run
	// (each interval is a histogram per phase, about 180 KB each):
	// results.Run.Intervals stays empty.
	StreamIntervals bool
	// Log receives instance processes' stderr; nil discards it.
	Log io.Writer
	// StoreTransport is how instance processes reach the store:
	// TransportSync, TransportSequenced (docs/seq-store.md: process mode
	// only), or "" for sequenced where it can serve the run and sync
	// elsewhere; a run that asked for sequenced and cannot have it runs
	// sync and says why (EventFallback).
	StoreTransport string
	// Spawner, if set, places the instance processes (--instance-mode
	// process) on agents (package loadgen/agent) instead of starting them
	// as children of this process; goroutine instances stay here.
	Spawner Spawner
	// History: the run records every delivery's events (docs/history.md)
	// and reports them to the Reporter (EventHistory); a HistoryFile
	// among its reporters writes them.
	History bool
}

// Progress is the live state of a run.
type Progress struct {
	Strategy string
	Elapsed  time.Duration
	Offered  int64
	// Total is the run's payments when it has a bound (--payments, or
	// --rate × --duration), 0 when it offers until its duration is over.
	Total     int
	Done      int64 // deliveries handled
	RatePerS  float64
	P99       time.Duration // total latency so far
	UnsafeNow int64
	// Cycles are the workers' counts so far, warmup included: deliveries
	// taken, lock cycles acquired and not, errors by class.
	Cycles Snapshot
	// Store is what the store has judged so far (UnsafeNow is its sum of
	// unsafe outcomes).
	Store store.Counts
}

// instance is an instance as the runner drives it: in-process (Instance)
// or a child process (remoteInstance).
type instance interface {
	InstanceHandle
	Deliver(ctx context.Context, d Delivery) error
	Swap(into results.PhaseSet)
	// Outcomes is the acquire latency by outcome over the run so far.
	Outcomes() results.OutcomeSet
	Counts() Snapshot
	Stop() error
}

// gatherer is an instance whose latencies the collector can gather
// between intervals, recording them in batches (Instance.Gather).
type gatherer interface {
	Gather(into results.PhaseSet)
}

// loadDrainer is an instance that can finish its load apart from closing
// its strategy (Instance.Drain).
type loadDrainer interface{ Drain() }

// Pid is 0: an in-process instance cannot be paused on its own.
func (in *Instance) Pid() int { return 0 }

// Run drives one strategy through the scenario and returns what the store
// judged and what the workers measured. Cancelling ctx ends the run early
// with the partial figures (Summary.Interrupted) and a nil error. A
// strategy whose adapter is lost before the first payment (at New's
// probe) is a run too, unknown and with nothing offered (brokeAtStart).
func Run(ctx context.Context, o Options) (results.Run, error) {
	r := &runner{ctx: ctx, o: o, sc: o.Scenario, info: o.Strategy, rep: noReporter{}}
	if o.Reporter != nil {
		r.rep = &serial{r: o.Reporter}
	}
	defer r.close()
	if err := r.prepare(); err != nil {
		return results.Run{}, err
	}
	if err := r.begin(); err != nil {
		if errors.Is(err, strategies.ErrAdapterLost) && r.ctx.Err() == nil {
			return brokeAtStart(o, r.sc, err), nil
		}
		return results.Run{}, err
	}
	r.load()
	r.drain()
	return r.judge()
}

// runner is one Run in its phases: prepare checks the options, resets the
// store and sets the fault up; begin starts the instances, the history and
// the feed; load runs the fault and the collector alongside the offered
// payments; drain lets the instances finish what they hold; judge reads
// the counts into the summary. close undoes, last first, what the phases
// set up.
type runner struct {
	ctx      context.Context
	o        Options
	sc       Scenario
	info     strategies.Info
	rep      Reporter // o.Reporter, or noReporter
	wl       *Workload
	setup    store.Setup
	env      *FaultEnv
	st       store.Store // the store the workers call: hooked when a fault runs
	cleanups []func()

	transport string
	seq       bool
	insts     []instance
	sq        *seqStore
	hw        *historyWriter // nil once finished (judge) or with no history
	asksDrain *asksDrainer   // a deferred askBoard's drains, with no history file
	fd        *feed
	runCtx    context.Context
	cancelRun context.CancelFunc

	start, measureStart, end time.Time
	col                      *collector
	behind                   time.Duration
	faultDone                chan error
	cancelFault              func()
	dispatchErr, faultErr    error
	stopErrs                 []error
}

// onClose runs f when the run is over, before what was set up earlier.
func (r *runner) onClose(f func()) { r.cleanups = append(r.cleanups, f) }

func (r *runner) close() {
	for i := len(r.cleanups) - 1; i >= 0; i-- {
		r.cleanups[i]()
	}
}

// prepare checks the options, resets the store for the run and sets the
// fault up.
func (r *runner) prepare() error {
	o, sc, info := r.o, &r.sc, r.info
	if err := sc.Validate(); err != nil {
		return err
	}
	if info.New == nil {
		return usageErr("strategy", "no strategy given (known: %v)", strategies.Names())
	}
	if err := checkTransport(o); err != nil {
		return err
	}
	if info.Transactional {
		if _, ok := o.Store.(store.Transactor); !ok || sc.Store != StorePostgres {
			return usageErr("store", "%s runs each delivery as a transaction on the Postgres store; want --store postgres", info.Name)
		}
	}
	r.wl = NewWorkload(sc)
	mode := store.AccountMode
	if sc.LockKey == "payment" {
		mode = store.PaymentMode
	}
	// The store learns the payments as they are offered (dispatch), and
	// how many critical sections a payment has at most (criticalSections).
	r.setup = store.Setup{Mode: mode, Fencing: sc.Fencing, Strict: sc.Fencing && sc.FencingStrict && info.Fencing, Balances: r.wl.Balances, Deliveries: criticalSections(info, *sc)}
	if err := o.Store.Reset(r.ctx, r.setup); err != nil {
		return fmt.Errorf("store reset: %w", err)
	}
	bound, _ := sc.PaymentBound()
	r.env = &FaultEnv{Strategy: info.Name, Info: info, Scenario: *sc, Lock: o.Lock, total: bound, slows: make([]atomic.Int64, sc.Instances)}
	r.env.strikes.watch(o.Store, max(sc.TTL, MinStrikeGrace))
	// The fault's hooks and slow orders ride on the store's Enter; with no
	// fault there are none, and the workers call the store itself (a
	// wrapper's call and its look at the hooks were two more cache lines
	// each critical section).
	r.st = o.Store
	if o.Fault != nil {
		r.st = hookedStore{Store: o.Store, env: r.env}
		switch {
		case sc.InstanceMode != InstanceProcess:
			r.env.asks = newAskBoard()
		case !info.Transactional && !info.Redelivers:
			r.env.asks = newDeferredAskBoard() // judged from their acquire events
		}
		r.onClose(func() { o.Fault.Close() })
		if err := o.Fault.Setup(r.ctx, r.env); err != nil {
			return fmt.Errorf("fault %s: %w", o.Fault.Name(), err)
		}
	}
	return nil
}

// begin starts the instances, the history and the feed.
func (r *runner) begin() error {
	o, sc, info, env := r.o, r.sc, r.info, r.env
	transport, why := storeTransport(sc, info, o.StoreTransport, o.Spawner == nil, env.holdsEnters)
	if why != "" {
		r.rep.Event(Event{Kind: EventFallback, Why: why})
	}
	r.transport, r.seq = transport, transport == TransportSequenced
	deferred := env.asks != nil && env.asks.deferred
	var inProcess *askBoard
	if !deferred {
		inProcess = env.asks
	}
	// A deferred board learns the acquires from the instances' history
	// events: they record them with or without a history file.
	insts, sq, stopAll, err := startInstances(r.ctx, sc, info, r.seq, o.History || deferred, env.Lock, r.st, o.Spawner, o.Log, inProcess)
	if err != nil {
		return err
	}
	r.insts, r.sq = insts, sq
	for _, in := range insts {
		if in, ok := in.(*Instance); !deferred && (!ok || in.asks == nil) {
			env.asks = nil // some acquires would go unseen: strikes are not judged so
		}
	}
	r.onClose(func() { stopAll() })
	r.startHistory(deferred)
	r.onClose(sq.close)
	if sq != nil {
		env.syncWith(sq.setSync)
	}
	for _, in := range insts {
		env.Instances = append(env.Instances, in)
	}
	r.runCtx, r.cancelRun = context.WithCancel(r.ctx)
	r.onClose(r.cancelRun)
	sq.watchFailure(r.runCtx.Done(), r.cancelRun)
	pulled, fd := pullFeed(sc, insts, o.Store, r.seq)
	if pulled != nil {
		pulled.feed = fd
		env.offers = &fd.offers // before anything reads them
	}
	r.fd = fd
	for _, in := range insts {
		if l, ok := in.(*Instance); ok {
			l.Start(r.runCtx)
		}
	}
	return nil
}

// startHistory starts the run's history, if it keeps one, and a deferred
// board's drains of the instances' acquire events, which go through the
// history when there is one.
func (r *runner) startHistory(deferred bool) {
	o, env := r.o, r.env
	var tap func([]clientEvent)
	if deferred {
		tap = env.asks.record
	}
	r.hw = startHistory(o, r.rep, r.info, r.setup, r.insts, tap)
	if deferred && r.hw == nil {
		r.asksDrain = drainAsks(r.insts, env.asks)
		r.onClose(r.asksDrain.stop)
	}
	if r.hw != nil {
		r.onClose(func() {
			if r.hw != nil {
				r.hw.detach() // a run that fails leaves it unfinished
			}
		})
		env.strikes.history(r.hw, faultName(o.Fault))
	}
}

// load offers the payments, with the fault striking and the collector
// gathering latency intervals alongside.
func (r *runner) load() {
	o, sc, env := r.o, r.sc, r.env
	r.start = time.Now()
	r.measureStart = r.start.Add(sc.Warmup)
	env.start = r.measureStart

	// The fault runs alongside the load and must be over before we judge.
	faultCtx, cancelFault := context.WithCancel(r.runCtx)
	r.cancelFault, r.faultDone = cancelFault, make(chan error, 1)
	if o.Fault != nil {
		go func() { r.faultDone <- o.Fault.Inject(faultCtx, env) }()
	} else {
		r.faultDone <- nil
	}
	// Collect latency intervals once a second, off the workers' hot path.
	r.col = newCollector(r.rep, o.StreamIntervals, r.insts, r.measureStart)
	r.col.start(sc.LatencyInterval(), r.progress)
	r.rep.Event(Event{Kind: EventLoadStart})
	offerer, _ := o.Store.(store.Offerer)
	if r.hw != nil && offerer != nil {
		offerer = historyOfferer{Offerer: offerer, w: r.hw}
	}
	if r.fd != nil {
		r.dispatchErr = r.fd.open(r.runCtx, sc, r.wl, offerer, r.start)
	} else {
		r.behind, r.dispatchErr = dispatch(r.runCtx, sc, r.wl, offerer, r.insts, env, r.start)
	}
	env.loaded.Store(true) // a random fault schedule strikes no more
}

// drain lets the instances finish what they hold, which ends the load and
// the fault, then closes the in-process instances' strategies: teardown,
// left out of the measured span and its CPU (an instance process's drain
// ends with its exit, inside them).
func (r *runner) drain() {
	r.stopErrs = make([]error, len(r.insts))
	for i, in := range r.insts {
		if d, ok := in.(loadDrainer); ok {
			d.Drain()
		} else {
			r.stopErrs[i] = in.Stop()
		}
	}
	r.end = time.Now()
	r.cancelFault()
	r.faultErr = <-r.faultDone
	r.col.stop(r.end)
	r.rep.Event(Event{Kind: EventLoadEnd})
	for i, in := range r.insts {
		if _, ok := in.(loadDrainer); ok {
			r.stopErrs[i] = in.Stop()
		}
	}
	r.progress()
}

// progress reports the run so far (EventProgress).
func (r *runner) progress() {
	f := func() Progress { return progress(r.o, r.env, r.insts, r.col, r.start) }
	r.rep.Event(Event{Kind: EventProgress, progress: &lazyProgress{f: f}})
}

// judge reads what the store judged and the workers measured into the
// run's summary, and finishes its history.
func (r *runner) judge() (results.Run, error) {
	ctx, o, sq := context.WithoutCancel(r.ctx), r.o, r.sq
	// The sequenced store's events are judged once all are applied.
	if err := sq.settle(ctx); err != nil {
		return results.Run{}, err
	}
	if sq != nil {
		r.rep.Event(Event{Kind: EventSequenced, Seq: sq.stats()})
	}
	counts, err := o.Store.Counts(ctx)
	if err != nil {
		return results.Run{}, fmt.Errorf("store counts: %w", err)
	}
	var snap Snapshot
	outcomes := results.NewOutcomeSet()
	for _, in := range r.insts {
		snap.Add(in.Counts())
		outcomes.Merge(in.Outcomes())
	}
	// A deferred board judges the strikes on every acquire reported.
	if r.hw != nil && r.env.asks != nil {
		r.hw.flush()
	}
	r.asksDrain.drainNow()
	sum := summarize(o, r.info, r.sc, r.env, counts, snap, r.col.total, r.end.Sub(r.measureStart), r.behind)
	if h := r.hw; h != nil {
		r.hw = nil // finished: nothing to stop
		h.end(sum.Payments)
	}
	sum.LatencyByOutcome = outcomes.Latencies()
	sum.Interrupted = r.ctx.Err() != nil
	sum.Params.StoreTransport = r.transport
	if n := sq.storeErrors(); n > 0 {
		sum.Errors[ErrClassStore] += n
	}
	if err := errors.Join(r.stopErrs...); err != nil && r.ctx.Err() == nil {
		sum.Errors[ErrClassOther]++
	}
	run := results.Run{Summary: sum, Total: r.col.total, Intervals: r.col.intervals}
	switch {
	case r.faultErr != nil && !errors.Is(r.faultErr, context.Canceled):
		return run, fmt.Errorf("fault %s: %w", o.Fault.Name(), r.faultErr)
	case r.dispatchErr != nil:
		return run, r.dispatchErr
	case r.col.logErr != nil:
		return run, fmt.Errorf("interval log: %w", r.col.logErr)
	}
	return run, nil
}
