package results_test

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/lockbench/lockbench/results"
	"github.com/lockbench/lockbench/results/resultstest"
)

func TestAggregate(t *testing.T) {
	six := resultstest.TrialRuns(6, map[int]bool{2: true, 4: true, 6: true})
	// Another cell: the same strategy without the fault.
	other := resultstest.TrialRuns(3, nil)
	for i := range other {
		other[i].Fault, other[i].Params.Fault = "none", "none"
	}
	cells := results.Aggregate(append(six, other...))
	if len(cells) != 2 {
		t.Fatalf("%d cells; want 2 (pause and none)", len(cells))
	}
	c := cells[0]
	if c.Trials != 6 || c.UnsafeTrials != 3 || c.UnsafeRate != 0.5 {
		t.Errorf("trials %d, unsafe %d, rate %g; want 6, 3, 0.5", c.Trials, c.UnsafeTrials, c.UnsafeRate)
	}
	if w := results.Wilson(3, 6); c.UnsafeRateCI95 != w {
		t.Errorf("unsafe_rate_ci95 = %v; want Wilson(3, 6) = %v", c.UnsafeRateCI95, w)
	}
	if c.UnsafeStrikeRate == nil || *c.UnsafeStrikeRate != 0.5 {
		t.Errorf("unsafe_strike_rate = %v; want 0.5 (3 of 6 strikes)", c.UnsafeStrikeRate)
	}
	// Six trials: the median's 95% interval is [min, max].
	if e := c.PaymentsPerSec; !e.CI || e.Median != 935 || e.Lo != 910 || e.Hi != 960 {
		t.Errorf("payments_per_sec = %+v; want median 935, ci95 [910, 960]", e)
	}
	if e := c.Latency["acquire"][results.StatP99]; !e.CI || e.N != 6 || math.Abs(e.Median-1.35e6) > 1 {
		t.Errorf("acquire p99 = %+v; want median 1.35ms over 6 trials with a CI", e)
	}
	// No trial has the samples for p99.9: no figure.
	if e := c.Latency["acquire"][results.StatP999]; e.OK() {
		t.Errorf("acquire p99.9 = %+v; want none (2,000 samples per trial)", e)
	}
	// Three trials: the range, not a CI.
	if e := cells[1].PaymentsPerSec; e.CI || e.Lo != 910 || e.Hi != 930 {
		t.Errorf("3 trials: payments_per_sec = %+v; want range [910, 930]", e)
	}

	// The JSON field names are a contract (the README's field table).
	var buf bytes.Buffer
	if err := results.WriteAggregate(&buf, cells); err != nil {
		t.Fatal(err)
	}
	var raw []map[string]any
	if err := json.Unmarshal(buf.Bytes(), &raw); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"strategy", "scenario", "fault", "variant", "fencing", "params", "trials", "unsafe_trials",
		"unsafe_rate", "unsafe_rate_ci95", "unsafe_strike_rate", "unsafe_strike_rate_ci95", "payments_per_sec", "latency"} {
		if _, ok := raw[0][f]; !ok {
			t.Errorf("aggregate.json lacks %q", f)
		}
	}
	pps := raw[0]["payments_per_sec"].(map[string]any)
	if _, ok := pps["ci95"]; !ok {
		t.Errorf("6 trials: payments_per_sec = %v; want a ci95", pps)
	}
	pps = raw[1]["payments_per_sec"].(map[string]any)
	if _, ok := pps["range"]; !ok {
		t.Errorf("3 trials: payments_per_sec = %v; want a range", pps)
	}
	// Strikes were counted in the second cell too (one per trial), none
	// unsafe: a rate of 0 with its interval.
	if v, ok := raw[1]["unsafe_strike_rate"]; !ok || v != 0.0 {
		t.Errorf("second cell: unsafe_strike_rate = %v (present %v); want 0", v, ok)
	}
	back, err := results.ReadAggregate(&buf)
	if err != nil || len(back) != 2 || back[0].UnsafeTrials != 3 {
		t.Errorf("ReadAggregate = %d cells, %v; want what was written", len(back), err)
	}
}

// A directory of single runs has no aggregate.json; one with trials has.
func TestAggregateFile(t *testing.T) {
	cases := []struct {
		name string
		ss   []results.Summary
		want bool
	}{
		{"single runs", resultstest.TrialRuns(1, nil), false},
		{"trials", resultstest.TrialRuns(2, nil), true},
	}
	for _, c := range cases {
		dir := t.TempDir()
		runs := make([]results.Run, len(c.ss))
		for i := range c.ss {
			runs[i] = results.Run{Summary: c.ss[i]}
		}
		if err := results.WriteData(dir, runs, results.Meta{}); err != nil {
			t.Fatal(err)
		}
		_, err := os.Stat(filepath.Join(dir, results.AggregateFile))
		if got := err == nil; got != c.want {
			t.Errorf("%s: aggregate.json exists = %v; want %v", c.name, got, c.want)
		}
	}
}
