package loadgen

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockbench/lockbench/internal/usage"
	"github.com/lockbench/lockbench/loadgen/store"
	"github.com/lockbench/lockbench/results"
	"github.com/lockbench/lockbench/strategies"
)

// seqRun runs o through the sequenced store and returns its summary and
// its sequencer's figures; it fails the test unless the run took the
// sequenced path and recorded it.
func seqRun(t *testing.T, o Options) seqFigures {
	t.Helper()
	o.StoreTransport = TransportSequenced
	var q *SeqStats
	o.Reporter = seqStatsTo(&q)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	r, err := Run(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if q == nil {
		t.Fatal("the run did not use the sequenced store")
	}
	if got := r.Summary.Params.StoreTransport; got != TransportSequenced {
		t.Errorf("params store transport %q; want %q", got, TransportSequenced)
	}
	return seqFigures{s: r.Summary, applied: q.Applied, gaps: q.Gaps, errs: q.Errors}
}

// seqFigures are a sequenced run's summary and its sequencer's counts.
type seqFigures struct {
	s                   results.Summary
	applied, gaps, errs int64
}

// The checker catches a missing lock through the sequenced store every
// time once the critical section holds work (here 100µs and 1ms): the
// one-way events are judged in an order they happened in.
func TestSeqStoreCatchesNoLock(t *testing.T) {
	for _, hold := range []string{"100us", "1ms"} {
		for i := range 3 {
			t.Run(fmt.Sprintf("hold=%s/%d", hold, i), func(t *testing.T) {
				o, sc := quick("nolock", func(s *Scenario) { s.InstanceMode, s.Hold = "process", mustHold(hold) })
				f := seqRun(t, o)
				s := f.s
				if !s.Unsafe || s.Duplicates == 0 {
					t.Errorf("unsafe=%v duplicates=%d; want unsafe with duplicates > 0", s.Unsafe, s.Duplicates)
				}
				if s.Processed != int64(sc.Payments) || len(s.Errors) != 0 {
					t.Errorf("processed %d of %d, errors %v; want all, none", s.Processed, sc.Payments, s.Errors)
				}
				// Two events per critical section; no process died.
				if want := 2 * s.Payments * int64(sc.Deliveries); f.applied != want || f.gaps != 0 || f.errs != 0 {
					t.Errorf("sequencer applied %d, gaps %d, errors %d; want %d, 0, 0", f.applied, f.gaps, f.errs, want)
				}
			})
		}
	}
}

func mustHold(s string) Hold {
	h, err := ParseHold(s)
	if err != nil {
		panic(err)
	}
	return h
}

// At no hold nolock's critical section through the sequenced store is a
// couple of queued frames, a microsecond: its two deliveries of a payment
// seldom truly overlap (goroutine instances, whose store calls are
// function calls, show none either), and the judge must not make any up.
// What must hold every time is exactness: every event applied, no gap,
// every payment processed, and duplicates exactly the applications beyond
// one per payment.
func TestSeqStoreExactAtNoHold(t *testing.T) {
	for i := range 3 {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			o, sc := quick("nolock", func(s *Scenario) { s.InstanceMode, s.Hold = "process", mustHold("0s") })
			mem := store.NewMemory()
			o.Store = mem
			f := seqRun(t, o)
			s := f.s
			if want := 2 * s.Payments * int64(sc.Deliveries); f.applied != want || f.gaps != 0 || f.errs != 0 {
				t.Errorf("sequencer applied %d, gaps %d, errors %d; want %d, 0, 0", f.applied, f.gaps, f.errs, want)
			}
			c, err := mem.Counts(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if c.Processed != int64(sc.Payments) || c.Duplicates != c.Applications-c.Processed || mem.Tracked() != 0 {
				t.Errorf("counts %+v, tracked %d; want all %d processed, duplicates = applications − processed, none tracked", c, mem.Tracked(), sc.Payments)
			}
			t.Logf("duplicates %d, overlaps %d", s.Duplicates, s.Overlaps)
		})
	}
}

// A run whose outcome does not depend on timing (one instance, its
// workers excluded by a mutex, two deliveries a payment) is judged the
// same through the sequenced store as through the synchronous one.
//
// Only the account as the lock key: with the payment as the key, two
// payments of one account may overdraw it or not as the timing goes
// (overdrafts 0 or 1 between synchronous runs).
func TestSeqStoreSameCounts(t *testing.T) {
	mut := func(s *Scenario) { s.InstanceMode, s.Instances, s.Deliveries, s.Workers = "process", 1, 2, 4 }
	counts := func(t *testing.T, seq bool) store.Counts {
		o, _ := quick("mutex", mut)
		mem := store.NewMemory()
		o.Store = mem
		if seq {
			seqRun(t, o)
		} else {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			if _, err := Run(ctx, o); err != nil {
				t.Fatal(err)
			}
		}
		c, err := mem.Counts(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		c.OverlapNs, c.OverlapMaxNs = 0, 0 // timing, not the verdict
		return c
	}
	sync, seq := counts(t, false), counts(t, true)
	if seq != sync || sync.Processed == 0 {
		t.Errorf("sequenced counts %+v; want the synchronous path's %+v", seq, sync)
	}
}

// A sequenced run whose events waiting behind a missing number go past
// the sequencer's bound fails with the sequencer's error, and its load
// stops at once, not at the end of its duration: it can judge nothing
// more. Here the bound
// is 1: two events behind a number another process's lazy frame (up to
// store.SeqFlushEvery) has not brought yet are one too many, which three
// processes at no hold meet within their first milliseconds. A run that
// does not is judged exactly, and the test tries again.
func TestSeqStoreBoundFailsTheRun(t *testing.T) {
	defer func(b int) { seqPendingBound = b }(seqPendingBound)
	seqPendingBound = 1
	const load = 20 * time.Second
	for i := range 3 {
		o, _ := quick("nolock", func(s *Scenario) {
			s.InstanceMode, s.Hold, s.Payments, s.Duration = "process", mustHold("0s"), 0, load
		})
		o.StoreTransport = TransportSequenced
		// The load's span: from the first payment to the instances
		// drained (their start and stop are not the load's).
		var took time.Duration
		o.Reporter = LoadSpan(func() func() {
			began := time.Now()
			return func() { took = time.Since(began) }
		})
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		r, err := Run(ctx, o)
		late := ctx.Err() != nil
		cancel()
		if late {
			t.Fatal("the run did not end")
		}
		if err == nil {
			if s := r.Summary; s.Processed != s.Payments || len(s.Errors) != 0 {
				t.Fatalf("run %d within the bound: processed %d of %d, errors %v; want all, none", i, s.Processed, s.Payments, s.Errors)
			}
			continue
		}
		if !errors.Is(err, store.ErrSeqOverflow) || !strings.Contains(err.Error(), "sync store transport") {
			t.Fatalf("run %d: %v; want %v, naming the sync transport", i, err, store.ErrSeqOverflow)
		}
		if took >= load {
			t.Errorf("the failed run's load lasted %s; want it stopped before its %s", took, load)
		}
		t.Logf("run %d failed, its load stopped after %s: %v", i, took.Round(time.Millisecond), err)
		return
	}
	t.Error("3 runs stayed within a bound of 1; want one past it")
}

// killOne is a fault that kills instance 0's process (SIGKILL) once a
// third of the payments have been offered: whatever numbers it had taken
// and not yet sent are gaps.
type killOne struct{}

func (killOne) Name() string                           { return "kill-instance" }
func (killOne) Setup(context.Context, *FaultEnv) error { return nil }
func (killOne) Close() error                           { return nil }
func (killOne) Inject(ctx context.Context, env *FaultEnv) error {
	if err := env.WaitOffered(ctx, 0.3); err != nil {
		return nil
	}
	env.Begin("kill instance 0")
	err := syscall.Kill(env.Instances[0].Pid(), syscall.SIGKILL)
	env.End("killed")
	return err
}

// A process killed mid-run does not hang the sequenced store: its gaps
// (if it died with numbers taken and unsent) are skipped once the others
// have gone past them or closed, and the run is judged on what arrived.
func TestSeqStoreSurvivesAKill(t *testing.T) {
	o, _ := quick("mutex", func(s *Scenario) {
		s.InstanceMode, s.Payments, s.Rate, s.Hold = "process", 4000, 4000, mustHold("100us")
	})
	o.Fault = killOne{}
	o.StoreTransport = TransportSequenced
	var got *SeqStats
	o.Reporter = seqStatsTo(&got)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	r, _ := Run(ctx, o) // the dead instance's deliveries end the run early
	if ctx.Err() != nil {
		t.Fatal("the run did not end")
	}
	if got == nil {
		t.Fatal("the run did not settle the sequenced store")
	}
	if got.Applied == 0 || got.Errors != 0 {
		t.Errorf("sequencer %+v; want events applied, no errors", *got)
	}
	t.Logf("sequencer %+v; payments %d processed %d", *got, r.Summary.Payments, r.Summary.Processed)
}

// Only the memory store and a strategy whose critical section is
// worker.critical's, with no fault holding holders inside their Enter, take
// the sequenced store; anything else keeps the synchronous one, with a
// reason.
func TestSequencedBar(t *testing.T) {
	base := DefaultScenario()
	base.InstanceMode, base.Store = "process", "memory"
	for _, tc := range []struct {
		name        string
		mut         func(*Scenario, *strategies.Info)
		holdsEnters bool
		want        string // a word the reason must have; "" for none
	}{
		// The case it is for.
		{name: "memory store", want: ""},
		// The Postgres store keeps the synchronous protocol.
		{name: "postgres", mut: func(s *Scenario, _ *strategies.Info) { s.Store = StorePostgres }, want: "postgres"},
		// pg-unique's deliveries are transactions.
		{name: "transactional", mut: func(_ *Scenario, i *strategies.Info) { i.Transactional = true }, want: "transactions"},
		// The queue's redeliveries.
		{name: "redelivers", mut: func(_ *Scenario, i *strategies.Info) { i.Redelivers = true }, want: "redelivered"},
		// Failover's contender gate (FaultEnv.HoldsEnters).
		{name: "holds enters", holdsEnters: true, want: "Enter"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc, info := base, strategies.Info{}
			if tc.mut != nil {
				tc.mut(&sc, &info)
			}
			got := sequencedBar(sc, info, tc.holdsEnters)
			if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
				t.Errorf("sequencedBar: got %q; want %q", got, tc.want)
			}
		})
	}
}

// Run refuses an unknown store transport, and the sequenced one without
// local instance processes, before anything starts.
func TestCheckTransport(t *testing.T) {
	for _, tc := range []struct {
		name      string
		transport string
		mode      InstanceMode
		sp        Spawner
		ok        bool
	}{
		// The default, spelled out or not.
		{name: "default", transport: "", mode: "goroutine", ok: true},
		{name: "sync", transport: TransportSync, mode: "goroutine", ok: true},
		// What it is for.
		{name: "sequenced", transport: TransportSequenced, mode: "process", ok: true},
		// In-process instances call the store directly.
		{name: "sequenced goroutine", transport: TransportSequenced, mode: "goroutine"},
		// Instances on agents get no page: theirs are applied on arrival.
		{name: "sequenced agents", transport: TransportSequenced, mode: "process", sp: noSpawner{}, ok: true},
		{name: "unknown", transport: "carrier-pigeon", mode: "process"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, _ := quick("nolock", func(s *Scenario) { s.InstanceMode = tc.mode })
			o.StoreTransport, o.Spawner = tc.transport, tc.sp
			err := checkTransport(o)
			var ue *usage.Error
			if tc.ok && err != nil || !tc.ok && (!errors.As(err, &ue) || !strings.Contains(err.Error(), "--store-transport")) {
				t.Errorf("checkTransport: got %v; want ok %v (else a usage error naming --store-transport)", err, tc.ok)
			}
		})
	}
}

// A run that asks for the sequenced store and cannot have it says why,
// once, runs sync, and records the transport it used; in-process
// instances record none. Local instance processes are sequenced by
// default, and a run the default cannot serve is sync without a word.
func TestTransportRecorded(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, tc := range []struct {
		name, transport string
		mode            InstanceMode
		holds           bool
		want            string // Params.StoreTransport
		fallbacks       int
	}{
		{name: "goroutine", mode: "goroutine", want: ""},
		{name: "process", mode: "process", want: TransportSequenced},
		{name: "process sync", mode: "process", transport: TransportSync, want: TransportSync},
		{name: "default held", mode: "process", holds: true, want: TransportSync},
		{name: "process sequenced", mode: "process", transport: TransportSequenced, want: TransportSequenced},
		// A fault that holds Enters: sync, said once.
		{name: "fallback", mode: "process", transport: TransportSequenced, holds: true, want: TransportSync, fallbacks: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, _ := quick("mutex", func(s *Scenario) { s.InstanceMode, s.Payments, s.Instances = tc.mode, 100, 2 })
			o.StoreTransport = tc.transport
			if tc.holds {
				o.Fault = holdsEnters{}
			}
			var why []string
			o.Reporter = Events(func(e Event) {
				if e.Kind == EventFallback {
					why = append(why, e.Why)
				}
			})
			r, err := Run(ctx, o)
			if err != nil {
				t.Fatal(err)
			}
			if got := r.Summary.Params.StoreTransport; got != tc.want || len(why) != tc.fallbacks {
				t.Errorf("store transport %q, fallbacks %q; want %q and %d", got, why, tc.want, tc.fallbacks)
			}
		})
	}
}

// holdsEnters is a fault that only says, in Setup, that it holds holders
// inside their Enter (as failover does).
type holdsEnters struct{}

func (holdsEnters) Name() string { return "holds-enters" }
func (holdsEnters) Setup(_ context.Context, env *FaultEnv) error {
	env.HoldsEnters()
	return nil
}
func (holdsEnters) Inject(context.Context, *FaultEnv) error { return nil }
func (holdsEnters) Close() error                            { return nil }

// noSpawner stands for agents.
type noSpawner struct{}

func (noSpawner) Place(store.Store, store.ServeOptions) (Placement, error) { return nil, nil }

// seqStatsTo is a Reporter that points *to at the sequenced store's
// stats, when the run reports them.
func seqStatsTo(to **SeqStats) Reporter {
	return Events(func(e Event) {
		if e.Kind == EventSequenced {
			s := e.Seq
			*to = &s
		}
	})
}
