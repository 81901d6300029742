package loadgen

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/lockbench/lockbench/loadgen/store"
	"github.com/lockbench/lockbench/results"
	"github.com/lockbench/lockbench/strategies"
	_ "github.com/lockbench/lockbench/strategies/mutex"
	"github.com/lockbench/lockbench/strategies/nolock"
)

func TestMain(m *testing.M) {
	MaybeRunChild()
	os.Exit(m.Run())
}

func quick(name string, mut func(*Scenario)) (Options, Scenario) {
	sc := DefaultScenario()
	sc.Payments = 600
	sc.Hold, _ = ParseHold("200us")
	mut(&sc)
	return Options{Strategy: strategies.MustLookup(name), Scenario: sc, Store: store.NewMemory()}, sc
}

// The checker must catch a missing lock every time: nolock with duplicate
// deliveries always shows duplicates, and without duplicates concurrent
// read-modify-writes of one account show lost updates.
func TestCheckerCatchesNoLock(t *testing.T) {
	for _, mode := range []InstanceMode{InstanceGoroutine, InstanceProcess} {
		t.Run(string(mode), func(t *testing.T) {
			o, _ := quick("nolock", func(s *Scenario) { s.InstanceMode = mode })
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			r, err := Run(ctx, o)
			if err != nil {
				t.Fatal(err)
			}
			s := r.Summary
			if !s.Unsafe || s.Duplicates == 0 {
				t.Errorf("nolock %s: unsafe=%v duplicates=%d; want unsafe with duplicates > 0", mode, s.Unsafe, s.Duplicates)
			}
			if s.Payments != 600 || s.Processed != 600 {
				t.Errorf("payments=%d processed=%d; want 600 and 600", s.Payments, s.Processed)
			}
			if got := s.Latency["total"].Count; got == 0 {
				t.Errorf("total latency count = 0; want > 0")
			}
			t.Logf("%s: dup=%d lost=%d lostupd=%d overlaps=%d pay/s=%.0f p99=%v", mode, s.Duplicates, s.Lost, s.LostUpdates, s.Overlaps, s.PaymentsPerSec, time.Duration(s.Latency["total"].P99))
		})
	}
}

// Within one instance, mutex excludes its workers: no lost updates, while
// nolock loses them.
func TestMutexOneInstance(t *testing.T) {
	for _, tc := range []struct {
		strategy string
		unsafe   bool
	}{
		{"nolock", true}, // workers of one instance race on 5 accounts
		{"mutex", false}, // the in-process lock is enough for one instance
	} {
		t.Run(tc.strategy, func(t *testing.T) {
			o, _ := quick(tc.strategy, func(s *Scenario) { s.Instances, s.Deliveries, s.Accounts = 1, 1, 5 })
			r, err := Run(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			if got := r.Summary.Unsafe; got != tc.unsafe {
				t.Errorf("unsafe = %v (lost updates %d, duplicates %d); want %v", got, r.Summary.LostUpdates, r.Summary.Duplicates, tc.unsafe)
			}
		})
	}
}

// Two requests for one payment on one server (a monolith): each
// payment is delivered to two workers of the single instance, at the same
// time. The in-process mutex excludes them; nolock processes the payment
// twice. Both instance modes route the copies to distinct workers.
func TestMonolithTwoDeliveries(t *testing.T) {
	for _, mode := range []InstanceMode{InstanceGoroutine, InstanceProcess} {
		for _, tc := range []struct {
			strategy string
			unsafe   bool
		}{
			{"nolock", true},
			{"mutex", false},
		} {
			t.Run(string(mode)+"/"+tc.strategy, func(t *testing.T) {
				o, _ := quick(tc.strategy, func(s *Scenario) {
					s.Instances, s.Deliveries, s.Workers, s.InstanceMode = 1, 2, 4, mode
				})
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				defer cancel()
				r, err := Run(ctx, o)
				if err != nil {
					t.Fatal(err)
				}
				s := r.Summary
				if s.Unsafe != tc.unsafe {
					t.Errorf("unsafe = %v (duplicates %d, lost updates %d); want %v", s.Unsafe, s.Duplicates, s.LostUpdates, tc.unsafe)
				}
				if tc.unsafe && s.Duplicates == 0 {
					t.Errorf("duplicates = 0; want the two copies caught processing one payment twice")
				}
				if s.Processed != s.Payments {
					t.Errorf("processed %d of %d payments; want all", s.Processed, s.Payments)
				}
			})
		}
	}
}

// A run leaves no payment behind in the memory store: each payment's
// state is released once its deliveries are judged, so what the store
// tracks is the payments in flight, none once the run has drained. The
// runs cover a broken lock (nolock: overlapping holders, versions walked
// and brought back), a working one (mutex, one instance), and the
// payment as the lock key; over goroutine and process instances.
func TestRunReleasesPayments(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  func(*Scenario)
	}{
		// Three instances race, two deliveries each: duplicates, lost
		// updates, stale reads.
		{"nolock", func(s *Scenario) { s.Payments, s.Accounts = 20_000, 20 }},
		// One instance's workers excluded by a mutex: nothing to judge.
		{"mutex", func(s *Scenario) { s.Payments, s.Instances, s.Deliveries = 20_000, 1, 1 }},
		// The payment is the lock key: its lock state is released too.
		{"nolock", func(s *Scenario) { s.Payments, s.LockKey = 20_000, "payment" }},
		// Process instances reach the store over its connection.
		{"nolock", func(s *Scenario) { s.Payments, s.InstanceMode = 5_000, "process" }},
	} {
		o, sc := quick(tc.name, func(s *Scenario) { s.Hold, _ = ParseHold("0s"); tc.set(s) })
		mem := store.NewMemory()
		o.Store = mem
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		r, err := Run(ctx, o)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		s := r.Summary
		if s.Payments != int64(sc.Payments) || s.Processed != s.Payments {
			t.Errorf("%s %s: payments %d processed %d; want %d and %d", tc.name, sc.LockKey, s.Payments, s.Processed, sc.Payments, sc.Payments)
		}
		if got := mem.Tracked(); got != 0 {
			t.Errorf("%s %s %s: the store tracks %d payments after the run; want 0 (every delivery judged)", tc.name, sc.LockKey, sc.InstanceMode, got)
		}
		c, err := mem.Counts(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if c.Unprocessed != 0 || c.Processed != s.Payments || c.Duplicates != c.Applications-c.Processed {
			t.Errorf("%s %s: store counts %+v; want every offered payment processed once or more, duplicates = applications − processed", tc.name, sc.LockKey, c)
		}
	}
}

// With StreamIntervals set the run hands over each interval as it closes and
// keeps none; the intervals tile the measured run and hold every cycle.
func TestRunStreamsIntervals(t *testing.T) {
	o, _ := quick("nolock", func(s *Scenario) {
		s.Payments, s.Rate, s.Interval = 0, 2000, 100*time.Millisecond
		s.Duration = 600 * time.Millisecond
	})
	var got []int64 // interval ends
	var cycles int64
	o.StreamIntervals = true
	o.Reporter = Intervals(func(iv results.Interval) error {
		if n := len(got); n > 0 && iv.StartNs != got[n-1] || n == 0 && iv.StartNs != 0 {
			t.Errorf("interval %d starts at %d; want where the one before ended", n, iv.StartNs)
		}
		got = append(got, iv.EndNs)
		cycles += iv.Hists[results.Total].TotalCount()
		return nil
	})
	r, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Intervals) != 0 {
		t.Errorf("the run kept %d intervals; want none (they went to the Reporter)", len(r.Intervals))
	}
	if len(got) < 5 {
		t.Errorf("the Reporter got %d intervals of a 600ms run at 100ms; want at least 5", len(got))
	}
	if want := r.Total[results.Total].TotalCount(); cycles != want || want == 0 {
		t.Errorf("the intervals hold %d cycles; want the run's %d (> 0)", cycles, want)
	}
}

// slowClose is nolock whose Close takes slowCloseFor: a client that
// takes its time to hang up (a pool closing its connections).
type slowClose struct{ nolock.NoLock }

const slowCloseFor = 2 * time.Second

func (slowClose) Close() error { time.Sleep(slowCloseFor); return nil }

func init() {
	strategies.Register(strategies.Info{
		Name:           "test-slowclose",
		Description:    "test: nolock whose Close takes 2s",
		Control:        true,
		KeepsNoContext: true,
		New: func(context.Context, strategies.Config) (strategies.Strategy, error) {
			return slowClose{}, nil
		},
	})
}

// The measured span (and the load's CPU span) ends when the instances
// have drained, before their strategies are closed: closing is teardown,
// and in a short run a pool's Close would otherwise lower the rate.
func TestRunSpanLeavesOutClose(t *testing.T) {
	o, _ := quick("test-slowclose", func(s *Scenario) { s.Hold, _ = ParseHold("0s"); s.Deliveries, s.Instances = 1, 1 })
	var spanEnd time.Time
	o.Reporter = LoadSpan(func() func() { return func() { spanEnd = time.Now() } })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	start := time.Now()
	r, err := Run(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	elapsed := time.Since(start)
	if got := time.Duration(r.Summary.DurationNs); got >= slowCloseFor {
		t.Errorf("measured span %v holds the strategy's %v Close", got, slowCloseFor)
	}
	if got := time.Since(spanEnd); got < slowCloseFor {
		t.Errorf("the load's span ended %v before Run returned; want the %v Close after it", got, slowCloseFor)
	}
	if elapsed < slowCloseFor {
		t.Errorf("Run returned after %v, before the strategy's Close (%v) ended", elapsed, slowCloseFor)
	}
	if r.Summary.Processed != 600 {
		t.Errorf("processed %d of 600", r.Summary.Processed)
	}
}

// A closed loop on one in-process instance, one delivery a payment, with
// the memory store, is fed by its workers taking payments themselves
// (feed); any other run, by the dispatcher. Either way every payment is
// offered, processed once and measured unless in the warmup, and a run
// cut short keeps what it did.
func TestRunFeed(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		mut  func(*Scenario)
		feed bool
	}{
		{"closed loop, one instance", func(s *Scenario) { s.Instances, s.Deliveries = 1, 1 }, true},
		{"open loop", func(s *Scenario) { s.Instances, s.Deliveries, s.Rate = 1, 1, 1000 }, false},
		{"two deliveries", func(s *Scenario) { s.Instances, s.Deliveries = 1, 2 }, false},
		{"two instances", func(s *Scenario) { s.Instances, s.Deliveries = 2, 1 }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, sc := quick("mutex", tc.mut)
			var insts []instance
			for i := range sc.Instances {
				cfg := InstanceConfig{ID: i, Strategy: "mutex", Scenario: sc}
				in, err := NewInstance(ctx, cfg, o.Store)
				if err != nil {
					t.Fatal(err)
				}
				defer in.Stop()
				insts = append(insts, in)
			}
			if in, f := pullFeed(sc, insts, o.Store, false); (f != nil) != tc.feed || (in != nil) != tc.feed {
				t.Errorf("fed by the workers: %v; want %v", f != nil, tc.feed)
			}
			if _, f := pullFeed(sc, insts, o.Store, true); f != nil {
				t.Error("a sequenced store's run fed by the workers")
			}
			r, err := Run(ctx, o)
			if err != nil {
				t.Fatal(err)
			}
			s := r.Summary
			if s.Payments != 600 || s.Processed != 600 {
				t.Errorf("payments %d, processed %d; want 600, 600", s.Payments, s.Processed)
			}
			if sc.Instances == 1 && s.Unsafe { // mutex excludes only one instance's workers
				t.Errorf("mutex on one instance: unsafe (duplicates %d, lost updates %d)", s.Duplicates, s.LostUpdates)
			}
			if got, want := s.Latency["total"].Count, int64(600*sc.Deliveries); got != want {
				t.Errorf("total latency count %d; want %d, one a delivery", got, want)
			}
		})
	}

	// Bounded by time, with a warmup: the warmup's payments are processed
	// but not measured.
	o, _ := quick("mutex", func(s *Scenario) {
		s.Instances, s.Deliveries, s.Payments = 1, 1, 0
		s.Warmup, s.Duration = 300*time.Millisecond, 400*time.Millisecond
	})
	r, err := Run(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	s := r.Summary
	measured := s.Latency["total"].Count
	if s.Processed == 0 || s.Payments != s.Processed || measured == 0 || measured >= s.Processed {
		t.Errorf("warmup and duration: payments %d, processed %d, measured %d; want payments = processed > measured > 0", s.Payments, s.Processed, measured)
	}

	// Cut short: the run ends within moments, with what it did.
	o, _ = quick("mutex", func(s *Scenario) { s.Instances, s.Deliveries, s.Payments = 1, 1, 10_000_000 })
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	o.Reporter = LoadSpan(func() func() {
		time.AfterFunc(300*time.Millisecond, cancel) // 300 ms into the load
		return func() {}
	})
	start := time.Now()
	r, err = Run(cctx, o)
	if err != nil {
		t.Fatal(err)
	}
	s = r.Summary
	// A payment a worker started as the run ended may be left
	// unprocessed (its acquire sees the run's end): what its hand held
	// at most, until it sees the feed halted.
	if !s.Interrupted || s.Processed == 0 || s.Processed >= 10_000_000 || s.Payments < s.Processed || s.Payments > s.Processed+int64(o.Scenario.Workers*feedChunk) {
		t.Errorf("interrupted: %v, payments %d, processed %d; want true, some, all offered but one a worker processed", s.Interrupted, s.Payments, s.Processed)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("an interrupted run took %v to return", took)
	}
}
