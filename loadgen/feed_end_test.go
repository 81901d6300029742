package loadgen

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
)

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
		case <-time.After(5 * time.Second):
			cancel()
			<-opened
			t.Fatalf("trial %d: the load did not end 5 s after its duration, with every worker gone (each had held a hand)", trial)
		}
		cancel()
		if err != nil {
			t.Fatalf("trial %d: open: %v", trial, err)
		}
		if late := time.Since(bound); late > sc.LatencyInterval() {
			t.Errorf("trial %d: the load ended %v after its duration; want within one interval (%v)", trial, late, sc.LatencyInterval())
		}
		if got := f.offers.offered.Load(); got != int64(sc.Workers) {
			t.Errorf("trial %d: offered %d; want %d, one a worker started (the rest given back)", trial, got, sc.Workers)
		}
	}
}

// Stress: many short runs of each kind, each of which must end within one
// interval of its bound by itself; one that ends only because the test's
// own deadline cancelled it is a hang. The pull feed's runs are the most,
// since its workers decide when they stop.
func TestRunEndsAtItsBound(t *testing.T) {
	if testing.Short() {
		t.Skip("400 runs")
	}
	kinds := []struct {
		name string
		runs int
		mut  func(*Scenario)
	}{
		{"pull feed", 200, func(s *Scenario) {}}, // one instance, closed loop (TestRunFeed)
		{"several instances", 100, func(s *Scenario) { s.Instances = 3 }},
		{"open loop", 100, func(s *Scenario) { s.Rate = 20_000 }},
	}
	began := time.Now()
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			var worst time.Duration
			var processed int64
			for i := range k.runs {
				late, n, err := runToBound(k.mut)
				if err != nil {
					t.Fatalf("run %d of %d: %v", i+1, k.runs, err)
				}
				worst, processed = max(worst, late), processed+n
			}
			// A busy machine may give a 20 ms run's workers no time at
			// all; all of them, some.
			if processed == 0 {
				t.Errorf("%d runs processed nothing", k.runs)
			}
			t.Logf("%d runs, %d payments processed, the latest ended %v after its bound", k.runs, processed, worst.Round(time.Microsecond))
		})
	}
	// Each run is held to its bound by runToBound; the total is the
	// machine's, and only logged.
	t.Logf("400 runs of 20 ms in %v", time.Since(began).Round(time.Millisecond))
}

// runToBound makes one 20 ms run of the mutex strategy and returns how long
// after its bound (the load's start plus its duration) Run returned, and
// the payments it processed.
func runToBound(mut func(*Scenario)) (time.Duration, int64, error) {
	o, sc := quick("mutex", func(s *Scenario) {
		s.Payments, s.Warmup, s.Duration, s.Deliveries = 0, 0, 20*time.Millisecond, 1
		s.Hold, _ = ParseHold("0")
		mut(s)
	})
	var bound time.Time
	o.LoadSpan = func() func() {
		bound = time.Now().Add(sc.Duration)
		return func() {}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := Run(ctx, o)
	returned := time.Now()
	if err != nil {
		return 0, 0, err
	}
	if ctx.Err() != nil || r.Summary.Interrupted {
		return 0, 0, fmt.Errorf("hung: ended only when the test's 10 s deadline cancelled it")
	}
	late := returned.Sub(bound)
	if late > sc.LatencyInterval() {
		return late, 0, fmt.Errorf("ended %v after its bound; want within one interval (%v)", late, sc.LatencyInterval())
	}
	return late, r.Summary.Processed, nil
}
