package loadgen

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

// hang is how late a test lets the load end before it calls it a hang: a
// busy machine delays it by a second or more, only a hang by this much.
// The product's promise, within one interval of the bound, is
// BenchmarkRunEnd's goal.
const hang = 10 * time.Second

// The duration ends while every worker holds a hand with payments left in
// it: each then sees halt, gives its hand back and stops, and none reaches
// a refill. The load must be over all the same, within one interval of
// its bound: it is the duration that ends it, not a worker.
func TestFeedEndsWithEveryHandHeld(t *testing.T) {
	for trial := range 5 {
		sc := DefaultScenario()
		sc.Payments, sc.Warmup, sc.Duration = 0, 0, 30*time.Millisecond
		wl := NewWorkload(&sc)
		f := newFeed()
		ctx, cancel := context.WithCancel(context.Background())
		start := time.Now()
		opened := make(chan error, 1)
		go func() { opened <- f.open(ctx, sc, wl, nil, start) }()

		// Every worker takes one payment, keeping three in its hand, and
		// waits for the duration's end before it takes again.
		var held, wg sync.WaitGroup
		held.Add(sc.Workers)
		for range sc.Workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-f.ready
				var h hand
				_, ok := f.take(&h)
				held.Done()
				if !ok || h.next == h.n {
					t.Errorf("trial %d: first take: ok %v, hand %d of %d; want a payment and more in hand", trial, ok, h.next, h.n)
					return
				}
				for !f.halt.Load() {
					time.Sleep(time.Millisecond)
				}
				if _, ok := f.take(&h); ok {
					t.Errorf("trial %d: a take after the duration's end gave a payment", trial)
				}
			}()
		}
		held.Wait()
		bound := start.Add(sc.Duration)
		wg.Wait()
		var err error
		select {
		case err = <-opened:
		case <-time.After(hang):
			cancel()
			<-opened
			t.Fatalf("trial %d: the load did not end %v after its duration, with every worker gone (each had held a hand): a hang", trial, hang)
		}
		cancel()
		if err != nil {
			t.Fatalf("trial %d: open: %v", trial, err)
		}
		t.Logf("trial %d: the load ended %v after its duration", trial, time.Since(bound).Round(time.Microsecond))
		if got := f.offers.offered.Load(); got != int64(sc.Workers) {
			t.Errorf("trial %d: offered %d; want %d, one a worker started (the rest given back)", trial, got, sc.Workers)
		}
	}
}

// Stress: many short runs of each kind, each of which must end by itself;
// one that ends only because the test's own deadline cancelled it (hang
// past its bound) is a hang. How late they end, against the promise of
// one interval, is BenchmarkRunEnd's. The pull feed's runs are the most,
// since its workers decide when they stop.
func TestRunEndsAtItsBound(t *testing.T) {
	if testing.Short() {
		t.Skip("400 runs")
	}
	began := time.Now()
	for _, k := range runEndKinds {
		t.Run(k.name, func(t *testing.T) {
			var lates []time.Duration
			var processed int64
			for i := range k.runs {
				late, n, err := runToBound(k.mut)
				if err != nil {
					t.Fatalf("run %d of %d: %v", i+1, k.runs, err)
				}
				lates, processed = append(lates, late), processed+n
			}
			// A busy machine may give a 20 ms run's workers no time at
			// all; all of them, some.
			if processed == 0 {
				t.Errorf("%d runs processed nothing", k.runs)
			}
			p50, worst, over := lateness(lates, interval)
			t.Logf("%d runs, %d payments processed, ended after their bound by %v (median), %v (worst); %d later than one interval",
				k.runs, processed, p50.Round(time.Microsecond), worst.Round(time.Microsecond), over)
		})
	}
	t.Logf("400 runs of 20 ms in %v", time.Since(began).Round(time.Millisecond))
}

// BenchmarkRunEnd: how late a 20 ms run of each kind ends after its bound
// (the load's start plus its duration), over b.N runs: late-p50-ms and
// late-max-ms, and over-interval, the runs that ended later than the
// product promises, one latency interval (1 s). Goal: over-interval 0.
//
//	go test -run '^$' -bench BenchmarkRunEnd -benchtime 100x ./loadgen/
func BenchmarkRunEnd(b *testing.B) {
	for _, k := range runEndKinds {
		b.Run(k.name, func(b *testing.B) {
			lates := make([]time.Duration, 0, b.N)
			for range b.N {
				late, _, err := runToBound(k.mut)
				if err != nil {
					b.Fatal(err)
				}
				lates = append(lates, late)
			}
			p50, worst, over := lateness(lates, interval)
			b.ReportMetric(float64(p50)/1e6, "late-p50-ms")
			b.ReportMetric(float64(worst)/1e6, "late-max-ms")
			b.ReportMetric(float64(over), "over-interval")
		})
	}
}

// interval is the default scenario's latency interval, within which a run
// is promised to end after its bound.
var interval = func() time.Duration { sc := DefaultScenario(); return sc.LatencyInterval() }()

// runEndKinds are the kinds of run TestRunEndsAtItsBound and
// BenchmarkRunEnd end at their bound, with the test's number of runs.
var runEndKinds = []struct {
	name string
	runs int
	mut  func(*Scenario)
}{
	{"pull feed", 200, func(s *Scenario) {}}, // one instance, closed loop (TestRunFeed)
	{"several instances", 100, func(s *Scenario) { s.Instances = 3 }},
	{"open loop", 100, func(s *Scenario) { s.Rate = 20_000 }},
}

// lateness is the median and the worst of lates, and how many exceed limit.
func lateness(lates []time.Duration, limit time.Duration) (p50, worst time.Duration, over int) {
	s := slices.Sorted(slices.Values(lates))
	for _, l := range s {
		if l > limit {
			over++
		}
	}
	return s[len(s)/2], s[len(s)-1], over
}

// runToBound makes one 20 ms run of the mutex strategy and returns how long
// after its bound (the load's start plus its duration) Run returned, and
// the payments it processed; an error if it failed, or hung.
func runToBound(mut func(*Scenario)) (time.Duration, int64, error) {
	o, sc := quick("mutex", func(s *Scenario) {
		s.Payments, s.Warmup, s.Duration, s.Deliveries = 0, 0, 20*time.Millisecond, 1
		s.Hold, _ = ParseHold("0")
		mut(s)
	})
	var bound time.Time
	o.Reporter = LoadSpan(func() func() {
		bound = time.Now().Add(sc.Duration)
		return func() {}
	})
	ctx, cancel := context.WithTimeout(context.Background(), hang)
	defer cancel()
	r, err := Run(ctx, o)
	returned := time.Now()
	if err != nil {
		return 0, 0, err
	}
	if ctx.Err() != nil || r.Summary.Interrupted {
		return 0, 0, fmt.Errorf("hung: ended only when the test's %v deadline cancelled it", hang)
	}
	return returned.Sub(bound), r.Summary.Processed, nil
}
