package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/lockbench/lockbench/results"
)

// summaryAt is a synthetic step result: achieved payments/s, p99 total
// latency and error count.
func summaryAt(achieved float64, p99 time.Duration, errs int64) results.Summary {
	s := results.Summary{
		PaymentsPerSec: achieved,
		Latency: map[string]results.Latency{
			"total":   {P99: int64(p99)},
			"acquire": {P50: int64(p99 / 10), P99: int64(p99 / 2)},
		},
		Errors: map[string]int64{},
	}
	if errs > 0 {
		s.Errors["timeout"] = errs
	}
	return s
}

func TestJudge(t *testing.T) {
	const slo = 20 * time.Millisecond
	cases := []struct {
		name   string
		s      results.Summary
		rate   float64
		ok     bool
		reason string // a substring of the reason; "" when ok
	}{
		// Everything within bounds holds.
		{"holds", summaryAt(1000, 5*time.Millisecond, 0), 1000, true, ""},
		// p99 exactly at the SLO still holds; one nanosecond over fails.
		{"p99 at slo", summaryAt(1000, slo, 0), 1000, true, ""},
		{"p99 over slo", summaryAt(1000, slo+1, 0), 1000, false, "p99 20.0ms > 20.0ms"},
		// Any error fails the rate.
		{"errors", summaryAt(1000, time.Millisecond, 3), 1000, false, "3 errors"},
		// Exactly 5% behind holds; more fails.
		{"5% behind", summaryAt(950, time.Millisecond, 0), 1000, true, ""},
		{"6% behind", summaryAt(940, time.Millisecond, 0), 1000, false, "achieved 940/s"},
		// Several reasons are all named.
		{"all at once", summaryAt(100, time.Second, 1), 1000, false, "p99 1.00s > 20.0ms, 1 errors, achieved 100/s"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := judge(&tc.s, tc.rate, slo)
			if got.OK != tc.ok {
				t.Errorf("ok = %v (reason %q); want %v", got.OK, got.Reason, tc.ok)
			}
			if !strings.Contains(got.Reason, tc.reason) || (tc.ok && got.Reason != "") {
				t.Errorf("reason = %q; want it to contain %q", got.Reason, tc.reason)
			}
		})
	}
	// A payment that no delivery managed to apply fails the rate.
	s := summaryAt(1000, time.Millisecond, 0)
	s.Unprocessed = 2
	if got := judge(&s, 1000, slo); got.OK || !strings.Contains(got.Reason, "2 payments given up") {
		t.Errorf("unprocessed: ok=%v reason=%q; want a failure naming 2 payments given up", got.OK, got.Reason)
	}
}

// capacityModel is a synthetic system that sustains rates up to capacity
// and blows its p99 above it. flaky rates fail on their first run only.
func capacityModel(capacity float64, flaky map[float64]bool, calls *[]float64) stepFunc {
	return func(_ context.Context, rate float64) (results.Run, error) {
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
	base := sweepConfig{start: 500, factor: 2, refine: 2, slo: 20 * time.Millisecond}
	cases := []struct {
		name      string
		cfg       func(c *sweepConfig)
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
		{"confirm failures", func(c *sweepConfig) { c.confirm = true }, 3000, nil,
			[]float64{500, 1000, 2000, 4000, 4000, 2828, 3363, 3363}, 2828, "p99"},
		// A one-off failure is forgiven when confirmed, and the ramp goes on.
		{"flaky step confirmed", func(c *sweepConfig) { c.confirm = true; c.refine = 0 }, 1500, map[float64]bool{1000: true},
			[]float64{500, 1000, 1000, 2000, 2000}, 1000, "p99"},
		// Without confirmation the same hiccup ends the ramp.
		{"flaky step believed", func(c *sweepConfig) { c.refine = 0 }, 1500, map[float64]bool{1000: true},
			[]float64{500, 1000}, 500, "p99"},
		// The first step fails: walk down by the factor, then bisect.
		{"first step fails", nil, 100, nil,
			[]float64{500, 250, 125, 63, 89, 105}, 89, "p99"},
		// --max-rate caps the ramp; the cap holding ends the sweep.
		{"max rate", func(c *sweepConfig) { c.maxRate = 1500 }, 1e9, nil,
			[]float64{500, 1000, 1500}, 1500, "--max-rate reached"},
		// Nothing ever holds: the walk down stops after three steps.
		{"never holds", nil, 0, nil,
			[]float64{500, 250, 125, 63}, 0, "p99"},
		// Nothing ever fails: the ramp stops at the step limit.
		{"never fails", func(c *sweepConfig) { c.start = 1 }, 1e12, nil,
			[]float64{1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048}, 2048, "step limit"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := base
			if tc.cfg != nil {
				tc.cfg(&cfg)
			}
			var calls []float64
			res, err := sweep(context.Background(), cfg, capacityModel(tc.capacity, tc.flaky, &calls))
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
	cfg := sweepConfig{start: 100, factor: 2, refine: 2, slo: time.Second}
	boom := errors.New("boom")
	n := 0
	res, err := sweep(context.Background(), cfg, func(_ context.Context, rate float64) (results.Run, error) {
		if n++; n == 3 {
			return results.Run{}, boom
		}
		return results.Run{Summary: summaryAt(rate, time.Millisecond, 0)}, nil
	})
	if !errors.Is(err, boom) || len(res.Steps) != 2 || res.Max != 200 {
		t.Errorf("step error: err=%v steps=%d max=%g; want boom after 2 steps, max 200", err, len(res.Steps), res.Max)
	}

	ctx, cancel := context.WithCancel(context.Background())
	res, err = sweep(ctx, cfg, func(_ context.Context, rate float64) (results.Run, error) {
		cancel()
		s := summaryAt(rate, time.Millisecond, 0)
		s.Interrupted = true
		return results.Run{Summary: s}, nil
	})
	if !errors.Is(err, context.Canceled) || len(res.Steps) != 0 {
		t.Errorf("cancelled: err=%v steps=%d; want context.Canceled and no step judged", err, len(res.Steps))
	}
}

func TestCost(t *testing.T) {
	steps := []planStep{
		{Rate: 500, OK: true, AcquireP50Ns: 1},
		{Rate: 1000, OK: true, AcquireP50Ns: 2},
		{Rate: 2000, OK: false, Retried: true, AcquireP50Ns: 30},
		{Rate: 2000, OK: false, AcquireP50Ns: 3},
		{Rate: 1414, OK: true, AcquireP50Ns: 4},
	}
	cases := []struct {
		name   string
		target float64
		want   float64 // AtRate
		p50    int64
	}{
		// The step at the target counts even when it failed; its retry,
		// not the first attempt.
		{"at target", 2000, 2000, 3},
		// Otherwise the nearest step that held, by ratio.
		{"nearest held", 1300, 1414, 4},
		{"above every step", 8000, 1414, 4},
		// Without a target: the highest that held.
		{"no target", 0, 1414, 4},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := cost(steps, tc.target)
			if got.AtRate != tc.want || got.AcquireP50Ns != tc.p50 {
				t.Errorf("cost at %g = rate %g p50 %d; want rate %g p50 %d", tc.target, got.AtRate, got.AcquireP50Ns, tc.want, tc.p50)
			}
		})
	}
	if got := cost(nil, 100); got != (planCost{}) {
		t.Errorf("cost of no steps = %+v; want zero", got)
	}
}

func TestMeasuredRisks(t *testing.T) {
	ss := []results.Summary{
		{Strategy: "setnx", Fault: "none", Processed: 10, Payments: 10},
		{Strategy: "setnx", Fault: "pause", Duplicates: 3},
		{Strategy: "setnx", Fault: "kill-node", Payments: 10, Processed: 4, Availability: 0.4},
		{Strategy: "fencing", Fault: "pause", Fencing: true, StaleRejected: 2, Availability: 1},
		{Strategy: "fencing", Fault: "pause", Fencing: false, Duplicates: 1},
	}
	cases := []struct {
		name, strategy string
		fenced         bool
		want           string
	}{
		{"unsafe and unavailable", "setnx", false, "unsafe under pause (3); unavailable under kill-node (40% processed)"},
		{"fenced row chosen", "fencing", true, "safe and available under all 1 faults run"},
		{"unfenced row chosen", "fencing", false, "unsafe under pause (1)"},
		{"missing", "etcd", true, "not in the verdicts file"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := measuredRisks(ss, tc.strategy, tc.fenced); got != tc.want {
				t.Errorf("got %q; want %q", got, tc.want)
			}
		})
	}
}

// Bad plan input exits 2 with one line naming the flag.
func TestPlanBadInput(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"negative target", []string{"--target-rate", "-5"}, "-target-rate"},
		{"zero target", []string{"--target-rate", "0"}, "-target-rate"},
		{"malformed slo", []string{"--slo-p99", "fast"}, "-slo-p99"},
		{"negative slo", []string{"--slo-p99", "-1ms"}, "-slo-p99"},
		{"step factor 1", []string{"--rate-step", "1"}, "-rate-step"},
		{"refine out of range", []string{"--refine", "7"}, "--refine"},
		{"start above max", []string{"--start-rate", "500", "--max-rate", "100"}, "--start-rate"},
		{"rate is the sweep's", []string{"--rate", "100"}, "--rate"},
		{"duration is the sweep's", []string{"--duration", "5s"}, "--duration"},
		{"unknown strategy", []string{"--strategy", "zookeeper"}, "--strategy"},
		{"missing verdicts", []string{"--verdicts", "/nonexistent/verdicts.json"}, "--verdicts"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			err := Run(context.Background(), append([]string{"plan", "--out", t.TempDir()}, tc.args...), &out, &errb)
			if code := ExitCode(err, &errb); code != 2 {
				t.Fatalf("exit code = %d (err %v); want 2", code, err)
			}
			line := strings.TrimSpace(errb.String())
			if strings.Contains(line, "\n") || !strings.Contains(line, tc.want) {
				t.Errorf("stderr = %q; want one line naming %q", line, tc.want)
			}
		})
	}
}

// A real, short plan against a local Redis: one strategy, two steps.
func TestPlanRun(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Redis; skipped with -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dir := t.TempDir()
	args := []string{"plan", "--strategy", "setnx", "--target-rate", "200", "--start-rate", "100", "--max-rate", "200",
		"--slo-p99", "1s", "--step-duration", "400ms", "--step-warmup", "100ms", "--refine", "0",
		"--instances", "2", "--workers", "2", "--out", dir}
	var out, errb bytes.Buffer
	start := time.Now()
	err := Run(ctx, args, &out, &errb)
	if err != nil && strings.HasPrefix(err.Error(), "servers:") {
		t.Skipf("local servers unavailable: %v", err)
	}
	if err != nil {
		t.Fatalf("plan: %v\n%s", err, errb.String())
	}
	t.Logf("plan took %s:\n%s", time.Since(start).Round(time.Millisecond), out.String())

	b, err := os.ReadFile(filepath.Join(dir, PlanFile))
	if err != nil {
		t.Fatal(err)
	}
	var rep planReport
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatalf("plan.json: %v", err)
	}
	if len(rep.Strategies) != 1 || rep.Strategies[0].Strategy != "setnx" {
		t.Fatalf("plan.json strategies = %+v; want setnx only", rep.Strategies)
	}
	p := rep.Strategies[0]
	if len(p.Steps) == 0 || p.Steps[0].Rate != 100 {
		t.Errorf("steps = %+v; want the first at 100/s", p.Steps)
	}
	// A 1s SLO at 200/s holds on any machine that can run the tests.
	if p.MaxRate != 200 || !p.Fits || p.Headroom != 1 || p.LimitedBy != "--max-rate reached" {
		t.Errorf("max %g fits %v headroom %g limited by %q; want 200, true, 1, --max-rate reached", p.MaxRate, p.Fits, p.Headroom, p.LimitedBy)
	}
	if p.Cost.AtRate != 200 || p.Cost.AcquireP50Ns <= 0 {
		t.Errorf("cost = %+v; want acquire latency at 200/s", p.Cost)
	}
	if !strings.Contains(out.String(), "setnx") || !strings.Contains(out.String(), "fit 200 payments/s: setnx (1.0×)") {
		t.Errorf("table does not say setnx fits:\n%s", out.String())
	}
	// The sweep's runs are in the run directory, named "sweep", with chart 3.
	f, err := os.Open(filepath.Join(dir, results.SummaryJSONFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ss, err := results.ReadJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	if len(ss) != len(p.Steps) {
		t.Errorf("summary.json has %d runs; want %d (one per step)", len(ss), len(p.Steps))
	}
	for _, s := range ss {
		if s.Scenario != results.ScenarioSweep {
			t.Errorf("run scenario = %q; want %q", s.Scenario, results.ScenarioSweep)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "latency-throughput.png")); err != nil {
		t.Errorf("chart 3 missing: %v", err)
	}
}
