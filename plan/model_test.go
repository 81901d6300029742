package plan

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/lockbench/lockbench/results/resultstest"
	"github.com/lockbench/lockbench/strategies"
)

func TestCost(t *testing.T) {
	steps := []Step{
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
			got := costAt(steps, tc.target)
			if got.AtRate != tc.want || got.AcquireP50Ns != tc.p50 {
				t.Errorf("cost at %g = rate %g p50 %d; want rate %g p50 %d", tc.target, got.AtRate, got.AcquireP50Ns, tc.want, tc.p50)
			}
		})
	}
	if got := costAt(nil, 100); got != (Cost{}) {
		t.Errorf("cost of no steps = %+v; want zero", got)
	}
}

func TestLineOf(t *testing.T) {
	sw := SweepResult{
		Steps:    []Step{{Rate: 500, OK: true, Unsafe: 2}, {Rate: 1000, OK: true, Unsafe: 1}, {Rate: 2000, Reason: "p99"}},
		Max:      1000,
		Achieved: 990, LimitedBy: "p99",
	}
	risks := func(info strategies.Info, fenced bool) string {
		if fenced {
			return info.Name + " fenced"
		}
		return info.Name + " unfenced"
	}
	lock := strategies.Info{Name: "fencing", Fencing: true, CrossProcess: true}
	cases := []struct {
		name    string
		info    strategies.Info
		fencing bool
		target  float64
		want    Line
	}{
		// A lock that holds the target fits, with its headroom, fenced
		// when the scenario checks tokens and the strategy has them.
		{"fits", lock, true, 500, Line{Fencing: true, Fits: true, Headroom: 2, Cost: Cost{AtRate: 500}, Risks: "fencing fenced"}},
		// Fencing on but no tokens: not fenced.
		{"no tokens", strategies.Info{Name: "setnx", CrossProcess: true}, true, 500, Line{Fits: true, Headroom: 2, Cost: Cost{AtRate: 500}, Risks: "setnx unfenced"}},
		// Above the highest rate that held: does not fit, and costs what
		// the failed step at the target cost.
		{"too slow", lock, false, 2000, Line{Headroom: 0.5, Cost: Cost{AtRate: 2000}, Risks: "fencing unfenced"}},
		// No exclusion never fits, however fast.
		{"not a lock", strategies.Info{Name: "mutex"}, false, 500, Line{Headroom: 2, Cost: Cost{AtRate: 500}, Risks: "mutex unfenced"}},
		// No target: no fit, no headroom, cost at the highest rate held.
		{"no target", lock, false, 0, Line{Cost: Cost{AtRate: 1000}, Risks: "fencing unfenced"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := LineOf(tc.info, tc.fencing, tc.target, sw, risks)
			want := tc.want
			want.Strategy, want.Exclusion = tc.info.Name, tc.info.CrossProcess
			want.MaxRate, want.MaxAchieved, want.LimitedBy, want.Steps, want.SweepUnsafe = 1000, 990, "p99", sw.Steps, 3
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got  %+v;\nwant %+v", got, want)
			}
		})
	}
}

// plan.json's field names are a contract with users' scripts: the golden
// file shows any change.
func TestReportJSON(t *testing.T) {
	rep, _ := printFixture()
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	resultstest.Golden(t, "plan.golden.json", append(b, '\n'))
}
