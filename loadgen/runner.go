package loadgen

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
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
	Strategy string
	Scenario Scenario
	// Lock holds the servers' endpoints (TTL and Owner are set per instance).
	Lock strategies.Config
	// Store is the coordinator's store; it is Reset at the start.
	Store store.Store
	// Fault is injected during the run; nil for none.
	Fault Fault
	// Progress, if set, is called about once a second (once per latency
	// interval), and once more when the run has drained.
	Progress func(Progress)
	// Interval, if set, is called by the collector with each measured
	// interval as it closes it (warmup intervals are dropped), from one
	// goroutine, off the workers' path: live metrics feed on it. It must
	// not keep or change the histograms, and should return quickly.
	Interval func(results.Interval)
	// Log receives instance processes' stderr; nil discards it.
	Log io.Writer
	// LoadSpan, if set, is called just before the first payment is
	// dispatched, and the function it returns once the instances have
	// drained and the last interval is collected: the span of the load
	// itself, without the set-up before it or the judging after
	// (BenchmarkHarnessCeiling measures its CPU).
	LoadSpan func() (end func())
}

// Progress is the live state of a run.
type Progress struct {
	Strategy  string
	Elapsed   time.Duration
	Offered   int64
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

// Pid is 0: an in-process instance cannot be paused on its own.
func (in *Instance) Pid() int { return 0 }

// Run drives one strategy through the scenario and returns what the store
// judged and what the workers measured. Cancelling ctx ends the run early
// with the partial figures (Summary.Interrupted) and a nil error.
func Run(ctx context.Context, o Options) (results.Run, error) {
	sc := o.Scenario
	if err := sc.Validate(); err != nil {
		return results.Run{}, err
	}
	info, ok := strategies.Lookup(o.Strategy)
	if !ok {
		return results.Run{}, usageErr("strategy", "unknown strategy %q (known: %v)", o.Strategy, strategies.Names())
	}
	if info.Transactional {
		if _, ok := o.Store.(store.Transactor); !ok || sc.Store != "postgres" {
			return results.Run{}, usageErr("store", "%s takes no lock: each delivery is a transaction on the Postgres store; want --store postgres", o.Strategy)
		}
	}
	wl := NewWorkload(&sc)
	mode := store.AccountMode
	if sc.LockKey == "payment" {
		mode = store.PaymentMode
	}
	setup := store.Setup{Mode: mode, Fencing: sc.Fencing, Strict: sc.Fencing && sc.FencingStrict && info.Fencing, Balances: wl.Balances, Payments: len(wl.Payments), PaymentAccount: wl.PaymentAccounts()}
	if err := o.Store.Reset(ctx, setup); err != nil {
		return results.Run{}, fmt.Errorf("store reset: %w", err)
	}
	env := &FaultEnv{Strategy: o.Strategy, Info: info, Scenario: sc, Lock: o.Lock, total: len(wl.Payments)}
	env.strikes.watch(o.Store, max(sc.TTL, MinStrikeGrace))
	st := hookedStore{Store: o.Store, env: env}
	if o.Fault != nil {
		defer o.Fault.Close()
		if err := o.Fault.Setup(ctx, env); err != nil {
			return results.Run{}, fmt.Errorf("fault %s: %w", o.Fault.Name(), err)
		}
	}

	insts, stopAll, err := startInstances(ctx, sc, o.Strategy, env.Lock, st, o.Log)
	if err != nil {
		return results.Run{}, err
	}
	defer func() { stopAll() }()
	for _, in := range insts {
		env.Instances = append(env.Instances, in)
	}

	runCtx, cancelRun := context.WithCancel(ctx)
	defer cancelRun()
	for _, in := range insts {
		if l, ok := in.(*Instance); ok {
			l.Start(runCtx)
		}
	}

	start := time.Now()
	measureStart := start.Add(sc.Warmup)
	env.start = measureStart

	// The fault runs alongside the load and must be over before we judge.
	faultCtx, cancelFault := context.WithCancel(runCtx)
	faultDone := make(chan error, 1)
	if o.Fault != nil {
		go func() { faultDone <- o.Fault.Inject(faultCtx, env) }()
	} else {
		faultDone <- nil
	}

	// Collect latency intervals once a second, off the workers' hot path.
	total := results.NewPhaseSet()
	var intervals []results.Interval
	var colMu sync.Mutex
	collect := func(now time.Time) {
		iv := results.NewPhaseSet()
		for _, in := range insts {
			in.Swap(iv)
		}
		colMu.Lock()
		defer colMu.Unlock()
		startNs := int64(0)
		if n := len(intervals); n > 0 {
			startNs = intervals[n-1].EndNs
		}
		endNs := int64(now.Sub(measureStart))
		if endNs < 0 {
			return // still in the warmup: drop it
		}
		total.Merge(iv)
		intervals = append(intervals, results.Interval{StartNs: startNs, EndNs: endNs, Hists: iv})
		if o.Interval != nil {
			o.Interval(intervals[len(intervals)-1])
		}
	}
	tickDone := make(chan struct{})
	var tickWG sync.WaitGroup
	tickWG.Add(1)
	go func() {
		defer tickWG.Done()
		t := time.NewTicker(sc.LatencyInterval())
		defer t.Stop()
		for {
			select {
			case <-tickDone:
				return
			case now := <-t.C:
				collect(now)
				if o.Progress != nil {
					o.Progress(progress(o, env, insts, total, &colMu, start))
				}
			}
		}
	}()

	endSpan := func() {}
	if o.LoadSpan != nil {
		endSpan = o.LoadSpan()
	}
	behind := dispatch(runCtx, sc, wl, insts, env, start)
	env.loaded.Store(true) // a random fault schedule strikes no more
	// Drain: stop the instances (each finishes what it holds).
	var stopErrs []error
	for _, in := range insts {
		stopErrs = append(stopErrs, in.Stop())
	}
	end := time.Now()
	cancelFault()
	faultErr := <-faultDone
	close(tickDone)
	tickWG.Wait()
	collect(end)
	endSpan()
	if o.Progress != nil {
		o.Progress(progress(o, env, insts, total, &colMu, start))
	}

	counts, err := o.Store.Counts(context.WithoutCancel(ctx))
	if err != nil {
		return results.Run{}, fmt.Errorf("store counts: %w", err)
	}
	var snap Snapshot
	outcomes := results.NewOutcomeSet()
	for _, in := range insts {
		snap.Add(in.Counts())
		outcomes.Merge(in.Outcomes())
	}
	sum := summarize(o, info, sc, env, counts, snap, total, end.Sub(measureStart), behind)
	sum.LatencyByOutcome = outcomes.Latencies()
	sum.Interrupted = ctx.Err() != nil
	if err := errors.Join(stopErrs...); err != nil && ctx.Err() == nil {
		sum.Errors[ErrClassOther]++
	}
	if faultErr != nil && !errors.Is(faultErr, context.Canceled) {
		return results.Run{Summary: sum, Total: total, Intervals: intervals}, fmt.Errorf("fault %s: %w", o.Fault.Name(), faultErr)
	}
	return results.Run{Summary: sum, Total: total, Intervals: intervals}, nil
}

// dispatch offers every payment to its target instances at its intended
// time, and returns how far it fell behind schedule at worst.
func dispatch(ctx context.Context, sc Scenario, wl *Workload, insts []instance, env *FaultEnv, start time.Time) time.Duration {
	pacer := NewPacer(sc.Rate)
	var behind time.Duration
	deadline := time.Time{}
	if sc.Duration > 0 {
		deadline = start.Add(sc.Warmup + sc.Duration)
	}
	measureStart := start.Add(sc.Warmup)
	var timer *time.Timer
	for i, p := range wl.Payments {
		now := nowFrom(start) // one clock read, not two
		if !deadline.IsZero() && now.After(deadline) {
			break
		}
		intended := now
		if at, ok := pacer.Intended(i); ok {
			intended = start.Add(at)
			if wait := intended.Sub(now); wait > 0 {
				if timer == nil {
					timer = time.NewTimer(wait)
				} else {
					timer.Reset(wait)
				}
				select {
				case <-ctx.Done():
					timer.Stop()
					return behind
				case <-timer.C:
				}
			} else if -wait > behind {
				behind = -wait
			}
		}
		d := Delivery{Payment: p.ID, Account: p.Account, Amount: p.Amount, IntendedNs: intended.UnixNano(), Record: !intended.Before(measureStart)}
		for _, t := range wl.Targets[i] {
			d.Worker = int32(t.Worker)
			if err := insts[t.Instance].Deliver(ctx, d); err != nil {
				return behind
			}
		}
		env.offered.Add(1)
		if d.Record {
			env.measured.Add(1)
		}
	}
	return behind
}

// startInstances builds the instances (in-process or child processes) and
// returns a function that stops them all, for the error paths.
func startInstances(ctx context.Context, sc Scenario, name string, lock strategies.Config, st store.Store, log io.Writer) ([]instance, func(), error) {
	var insts []instance
	var ln net.Listener
	stopAll := func() {
		for _, in := range insts {
			_ = in.Stop()
		}
		if ln != nil {
			_ = ln.Close()
		}
	}
	if sc.InstanceMode == "process" {
		var err error
		ln, err = store.ListenLocal()
		if err != nil {
			return nil, nil, err
		}
		go func() { _ = store.ServeWith(ln, st, store.ServeOptions{Inline: sc.Store == "memory"}) }()
	}
	for id := range sc.Instances {
		cfg := InstanceConfig{ID: id, Strategy: name, Scenario: sc, Lock: lock}
		var in instance
		var err error
		if sc.InstanceMode == "process" {
			in, err = startRemote(ctx, cfg, ln.Addr().String(), log)
		} else {
			in, err = NewInstance(ctx, cfg, st)
		}
		if err != nil {
			stopAll()
			return nil, nil, fmt.Errorf("instance %d (%s): %w", id, name, err)
		}
		insts = append(insts, in)
	}
	return insts, stopAll, nil
}

func progress(o Options, env *FaultEnv, insts []instance, total results.PhaseSet, mu *sync.Mutex, start time.Time) Progress {
	var snap Snapshot
	for _, in := range insts {
		snap.Add(in.Counts())
	}
	p := Progress{Strategy: o.Strategy, Elapsed: time.Since(start), Offered: env.offered.Load(), Total: env.total, Done: snap.Deliveries, Cycles: snap}
	if s := p.Elapsed.Seconds(); s > 0 {
		p.RatePerS = float64(p.Offered) / s
	}
	mu.Lock()
	p.P99 = time.Duration(total[results.Total].ValueAtQuantile(99))
	mu.Unlock()
	if c, err := o.Store.Counts(context.Background()); err == nil {
		p.Store = c
		p.UnsafeNow = c.Duplicates + c.Lost + c.Overdrafts + c.LostUpdates + c.StaleAccepted
	}
	return p
}

func summarize(o Options, info strategies.Info, sc Scenario, env *FaultEnv, c store.Counts, snap Snapshot, total results.PhaseSet, measured, behind time.Duration) results.Summary {
	faultName := "none"
	if o.Fault != nil {
		faultName = o.Fault.Name()
	}
	payments := env.offered.Load()
	s := results.Summary{
		Strategy:      o.Strategy,
		Scenario:      sc.Name,
		Variant:       sc.Variant,
		Fault:         faultName,
		Fencing:       sc.Fencing && info.Fencing,
		Payments:      payments,
		Deliveries:    payments * int64(sc.Deliveries),
		Processed:     c.Processed,
		Duplicates:    c.Duplicates,
		Lost:          c.Lost,
		Unprocessed:   max(0, payments-c.Processed),
		Overdrafts:    c.Overdrafts,
		LostUpdates:   c.LostUpdates,
		Overlaps:      c.Overlaps,
		OverlapNs:     c.OverlapNs,
		OverlapMaxNs:  c.OverlapMaxNs,
		StaleRejected: c.StaleRejected,
		StaleAccepted: c.StaleAccepted,
		TokenReused:   c.TokenReused,
		NotAcquired:   snap.NotAcquired,
		Errors:        snap.ErrorMap(),
		Latency:       total.Latencies(),
		DurationNs:    int64(measured),
		StartUnixNs:   env.start.UnixNano(),
		BehindNs:      int64(behind),
		Params: results.Params{
			Instances: sc.Instances, Workers: sc.Workers, DeliveriesEach: sc.Deliveries,
			Accounts: sc.Accounts, AccountDist: sc.AccountDist.String(), LockKey: sc.LockKey,
			Rate: sc.Rate, Hold: sc.Hold.String(), TTLNs: int64(sc.TTL), Store: sc.Store,
			InstanceMode: sc.InstanceMode, Seed: sc.Seed,
		},
	}
	if secs := measured.Seconds(); secs > 0 {
		s.OpsPerSec = float64(snap.Measured) / secs
		s.PaymentsPerSec = float64(env.measured.Load()) / secs
	}
	env.mu.Lock()
	s.FaultWindow = env.window
	if s.FaultWindow != nil && s.FaultWindow.EndNs == 0 {
		s.FaultWindow.EndNs = int64(measured)
	}
	s.FaultEvents = env.events
	env.mu.Unlock()
	s.Strikes, s.UnsafeStrikes = env.strikes.finish(c)
	s.Finish()
	return s
}
