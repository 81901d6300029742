package plan

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/lockbench/lockbench/results"
)

// capacityModel is a synthetic system that sustains rates up to capacity
// and blows its p99 above it. flaky rates fail on their first run only.
func capacityModel(capacity float64, flaky map[float64]bool, calls *[]float64) StepFunc {
	return func(_ context.Context, rate float64, _ int) (results.Run, error) {
		*calls = append(*calls, rate)
		p99 := 2 * time.Millisecond
		if rate > capacity || flaky[rate] {
			delete(flaky, rate)
			p99 = time.Second
		}
		return results.Run{Summary: summaryAt(rate, p99, 0)}, nil
	}
}

func TestSweep(t *testing.T) {
	base := Config{Start: 500, Factor: 2, Refine: 2, SLO: 20 * time.Millisecond}
	cases := []struct {
		name      string
		cfg       func(c *Config)
		capacity  float64
		flaky     map[float64]bool
		wantCalls []float64
		wantMax   float64
		limitedBy string
	}{
		// Ramp ×2 to the first failure, then two bisections by geometric
		// mean: 2828 holds, 3363 fails.
		{"ramp and bisect", nil, 3000, nil,
			[]float64{500, 1000, 2000, 4000, 2828, 3363}, 2828, "p99"},
		// With confirmation every failing rate runs twice.
		{"confirm failures", func(c *Config) { c.Confirm = true }, 3000, nil,
			[]float64{500, 1000, 2000, 4000, 4000, 2828, 3363, 3363}, 2828, "p99"},
		// A one-off failure is forgiven when confirmed, and the ramp goes on.
		{"flaky step confirmed", func(c *Config) { c.Confirm = true; c.Refine = 0 }, 1500, map[float64]bool{1000: true},
			[]float64{500, 1000, 1000, 2000, 2000}, 1000, "p99"},
		// Without confirmation the same hiccup ends the ramp.
		{"flaky step believed", func(c *Config) { c.Refine = 0 }, 1500, map[float64]bool{1000: true},
			[]float64{500, 1000}, 500, "p99"},
		// The first step fails: walk down by the factor, then bisect.
		{"first step fails", nil, 100, nil,
			[]float64{500, 250, 125, 63, 89, 105}, 89, "p99"},
		// The rate cap limits the ramp; the cap holding ends the sweep.
		{"max rate", func(c *Config) { c.MaxRate = 1500 }, 1e9, nil,
			[]float64{500, 1000, 1500}, 1500, "--max-rate reached"},
		// Nothing ever holds: the walk down stops after three steps.
		{"never holds", nil, 0, nil,
			[]float64{500, 250, 125, 63}, 0, "p99"},
		// Nothing ever fails: the ramp stops at the step limit.
		{"never fails", func(c *Config) { c.Start = 1 }, 1e12, nil,
			[]float64{1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048}, 2048, "step limit"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := base
			if tc.cfg != nil {
				tc.cfg(&cfg)
			}
			var calls []float64
			res, err := Sweep(context.Background(), cfg, capacityModel(tc.capacity, tc.flaky, &calls))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(calls, tc.wantCalls) {
				t.Errorf("rates run = %v; want %v", calls, tc.wantCalls)
			}
			if res.Max != tc.wantMax {
				t.Errorf("max = %g; want %g", res.Max, tc.wantMax)
			}
			if !strings.Contains(res.LimitedBy, tc.limitedBy) {
				t.Errorf("limited by %q; want it to contain %q", res.LimitedBy, tc.limitedBy)
			}
			if len(res.Steps) != len(calls) {
				t.Errorf("%d steps recorded for %d runs; want one each", len(res.Steps), len(calls))
			}
			retried := 0
			for _, st := range res.Steps {
				if st.Retried {
					retried++
				}
			}
			if got, want := len(res.Runs), len(calls)-retried; got != want {
				t.Errorf("%d runs kept; want %d (every run but the %d retried)", got, want, retried)
			}
		})
	}
}

// A step error or a cancelled context ends the sweep with what it has.
func TestSweepStops(t *testing.T) {
	cfg := Config{Start: 100, Factor: 2, Refine: 2, SLO: time.Second}
	boom := errors.New("boom")
	n := 0
	res, err := Sweep(context.Background(), cfg, func(_ context.Context, rate float64, _ int) (results.Run, error) {
		if n++; n == 3 {
			return results.Run{}, boom
		}
		return results.Run{Summary: summaryAt(rate, time.Millisecond, 0)}, nil
	})
	if !errors.Is(err, boom) || len(res.Steps) != 2 || res.Max != 200 {
		t.Errorf("step error: err=%v steps=%d max=%g; want boom after 2 steps, max 200", err, len(res.Steps), res.Max)
	}

	ctx, cancel := context.WithCancel(context.Background())
	res, err = Sweep(ctx, cfg, func(_ context.Context, rate float64, _ int) (results.Run, error) {
		cancel()
		s := summaryAt(rate, time.Millisecond, 0)
		s.Interrupted = true
		return results.Run{Summary: s}, nil
	})
	if !errors.Is(err, context.Canceled) || len(res.Steps) != 0 {
		t.Errorf("cancelled: err=%v steps=%d; want context.Canceled and no step judged", err, len(res.Steps))
	}
}

func TestStartRate(t *testing.T) {
	cases := []struct {
		name           string
		target, factor float64
		want           float64
	}{
		// Without a target: the default.
		{"no target", 0, 2, DefaultStartRate},
		// Two steps below the target, so the ramp hits it.
		{"target ×2", 1000, 2, 250},
		{"target ×1.5", 1000, 1.5, 444},
		// Low rates keep a decimal.
		{"low target", 10, 2, 2.5},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := StartRate(tc.target, tc.factor); got != tc.want {
				t.Errorf("StartRate(%g, %g) = %g; want %g", tc.target, tc.factor, got, tc.want)
			}
		})
	}
}

// A sweep over a synthetic system that holds up to 3000 payments/s: in
// lockbench the step function runs one open-loop scenario at the rate.
func ExampleSweep() {
	step := func(_ context.Context, rate float64, _ int) (results.Run, error) {
		p99 := 2 * time.Millisecond
		if rate > 3000 {
			p99 = time.Second
		}
		s := results.Summary{PaymentsPerSec: rate, Latency: map[string]results.Latency{"total": {P99: int64(p99), Count: 2000}}}
		return results.Run{Summary: s}, nil
	}
	cfg := Config{Start: 500, Factor: 2, Refine: 2, SLO: DefaultSLOP99}
	res, err := Sweep(context.Background(), cfg, step)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, st := range res.Steps {
		if st.OK {
			fmt.Printf("%.0f/s holds\n", st.Rate)
		} else {
			fmt.Printf("%.0f/s fails: %s\n", st.Rate, st.Reason)
		}
	}
	fmt.Printf("max sustainable: %.0f/s, limited by %s\n", res.Max, res.LimitedBy)
	// Output:
	// 500/s holds
	// 1000/s holds
	// 2000/s holds
	// 4000/s fails: p99 1.00s > 20.0ms
	// 2828/s holds
	// 3363/s fails: p99 1.00s > 20.0ms
	// max sustainable: 2828/s, limited by p99 1.00s > 20.0ms
}

// With trials, each rate runs that many times and holds when more than
// half of its trials hold; every trial is a step of its own.
func TestSweepTrials(t *testing.T) {
	cases := []struct {
		name     string
		failing  map[int]bool // trials that fail at 1000/s
		wantMax  float64
		wantRuns int
	}{
		// One bad trial of three is outvoted.
		{"one of three fails", map[int]bool{2: true}, 1000, 6},
		// Two of three fail: the rate fails.
		{"two of three fail", map[int]bool{1: true, 3: true}, 500, 6},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := Config{Start: 500, Factor: 2, MaxRate: 1000, SLO: 20 * time.Millisecond, Trials: 3, Confirm: true}
			step := func(_ context.Context, rate float64, trial int) (results.Run, error) {
				p99 := 2 * time.Millisecond
				if rate == 1000 && c.failing[trial] {
					p99 = time.Second
				}
				return results.Run{Summary: summaryAt(rate, p99, 0)}, nil
			}
			res, err := Sweep(context.Background(), cfg, step)
			if err != nil {
				t.Fatal(err)
			}
			if res.Max != c.wantMax || len(res.Runs) != c.wantRuns {
				t.Errorf("max %g after %d runs; want %g after %d (3 trials a rate, no confirming re-run)", res.Max, len(res.Runs), c.wantMax, c.wantRuns)
			}
			for i, st := range res.Steps {
				if want := i%3 + 1; st.Trial != want {
					t.Errorf("step %d: trial %d; want %d", i, st.Trial, want)
				}
			}
		})
	}
}

// Ramp is the rates the ramp tries while each holds: by the factor from
// the start, the cap last when there is one, at most MaxSteps.
func TestRamp(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Start: 250, Factor: 2, MaxRate: 1000}, "[250 500 1000]"},
		{Config{Start: 250, Factor: 2, MaxRate: 700}, "[250 500 700]"},
		{Config{Start: 900, Factor: 2, MaxRate: 700}, "[700]"},
		{Config{Start: 1.5, Factor: 1.5, MaxRate: 5}, "[1.5 2.3 3.5 5]"},
		{Config{Start: 250, Factor: 2}, "[250 500 1000 2000 4000 8000 16000 32000 64000 128000 256000 512000]"},
	} {
		if got := fmt.Sprint(Ramp(tc.cfg)); got != tc.want {
			t.Errorf("Ramp(%+v) = %s; want %s", tc.cfg, got, tc.want)
		}
	}
}

// MostSteps bounds what a sweep tries, whatever its steps answer: every
// rate, from the first failing to none failing, is tried in turn.
func TestMostSteps(t *testing.T) {
	for _, cfg := range []Config{
		{Start: 250, Factor: 2, MaxRate: 3000, Refine: 2, Confirm: true},
		{Start: 250, Factor: 2, Refine: 2},
		{Start: 4, Factor: 2, Refine: 3},
		{Start: 250, Factor: 1.5, MaxRate: 260, Refine: 6},
	} {
		cfg.SLO = 20 * time.Millisecond
		most, lowest := MostSteps(cfg)
		for capacity := 0.0; capacity <= 2*cfg.Start*math.Pow(cfg.Factor, MaxSteps); capacity = max(1, capacity*1.7) {
			var rates []float64
			limit := capacity
			if _, err := Sweep(context.Background(), cfg, capacityModel(capacity, nil, &rates)); err != nil {
				t.Fatal(err)
			}
			tried := map[float64]bool{}
			for _, r := range rates {
				tried[r] = true
				if r < lowest {
					t.Errorf("%+v, holding up to %g: tried %g; want none below Lowest %g", cfg, limit, r, lowest)
				}
			}
			if len(tried) > most {
				t.Errorf("%+v, holding up to %g: tried %d rates %v; want at most MostSteps %d", cfg, limit, len(tried), rates, most)
			}
		}
	}
}
