package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/lockbench/lockbench/results"
	"github.com/lockbench/lockbench/results/resultstest"
)

// withPPS sets each trial's payments/s.
func withPPS(ss []results.Summary, pps ...float64) []results.Summary {
	out := append([]results.Summary(nil), ss...)
	for i := range out {
		out[i].PaymentsPerSec = pps[i]
	}
	return out
}

func TestCompareRuns(t *testing.T) {
	base := resultstest.TrialRuns(6, nil)
	old := withPPS(base, 1000, 1010, 990, 1005, 995, 1002)
	cases := []struct {
		name     string
		new      []results.Summary
		newMeta  results.Meta
		delta    string // the start of payments/s' delta
		regress  bool   // at --fail-on-regression 5
		verdict  bool   // the verdict changed
		warnings []string
	}{
		// 20% slower, all six trials below all six: significant.
		{"slower", withPPS(base, 800, 810, 790, 805, 795, 802), results.Meta{}, "-20.0%", true, false, nil},
		// The same spread around the same median: no difference.
		{"same", withPPS(base, 1001, 999, 1009, 991, 1004, 996), results.Meta{}, "~ (p=", false, false, nil},
		// One trial cannot show a difference against six, however far
		// apart (the least p of 1 + 6 is 0.29); three against six can.
		{"too few", withPPS(resultstest.TrialRuns(1, nil), 500), results.Meta{}, "~ (too few trials)", false, false, nil},
		{"three against six", withPPS(resultstest.TrialRuns(3, nil), 500, 510, 490), results.Meta{}, "-50.0%", true, false, nil},
		// A cell that turns unsafe fails --fail-on-regression whatever its speed.
		{"turned unsafe", withPPS(resultstest.TrialRuns(6, map[int]bool{3: true}), 1000, 1010, 990, 1005, 995, 1002), results.Meta{}, "~", true, true, nil},
		// Another host and other parameters are said first.
		{"other host", func() []results.Summary {
			ss := withPPS(base, 1000, 1010, 990, 1005, 995, 1002)
			for i := range ss {
				ss[i].Params.Workers = 8
			}
			return ss
		}(), results.Meta{Host: results.Host{Hostname: "other", CPU: "Other CPU"}},
			"~", false, false, []string{"host differs: here → other", "CPU differs: Test CPU → Other CPU", "parameters differ: setnx verdicts pause: workers 4 → 8"}},
	}
	oldMeta := results.Meta{Host: results.Host{Hostname: "here", CPU: "Test CPU"}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cmp := CompareRuns(old, oldMeta, c.new, c.newMeta)
			if len(cmp.Rows) != 1 {
				t.Fatalf("%d rows; want 1", len(cmp.Rows))
			}
			r := cmp.Rows[0]
			if got := r.Metrics[0].DeltaString(); !strings.HasPrefix(got, c.delta) {
				t.Errorf("payments/s delta = %q; want it to start %q", got, c.delta)
			}
			if got := len(cmp.Regressions(5)) > 0; got != c.regress {
				t.Errorf("regressions at 5%% = %v; want %v", cmp.Regressions(5), c.regress)
			}
			if r.VerdictChanged() != c.verdict {
				t.Errorf("verdict changed = %v; want %v", r.VerdictChanged(), c.verdict)
			}
			if strings.Join(cmp.Warnings, "\n") != strings.Join(c.warnings, "\n") {
				t.Errorf("warnings = %q; want %q", cmp.Warnings, c.warnings)
			}
			var out bytes.Buffer
			if err := WriteComparison(&out, cmp, "old", "new"); err != nil {
				t.Fatal(err)
			}
			if c.verdict && !strings.Contains(out.String(), "**UNSAFE 1/6**") {
				t.Errorf("a changed verdict is not in bold:\n%s", out.String())
			}
		})
	}
}

// Directories of different ages compare: one written before trials (no
// trial field, fewer params) matches the new one's cells, and their
// missing params are no difference.
func TestCompareOldDirectory(t *testing.T) {
	old := resultstest.TrialRuns(1, nil)
	old[0].Trial = 0
	old[0].Params = results.Params{Instances: 2, Workers: 4, Seed: 1}
	cmp := CompareRuns(old, results.Meta{}, resultstest.TrialRuns(6, nil), results.Meta{})
	if len(cmp.Rows) != 1 || len(cmp.Warnings) != 0 {
		t.Errorf("rows %d, warnings %q; want 1 row and none", len(cmp.Rows), cmp.Warnings)
	}
	if d := cmp.Rows[0].Metrics[0].DeltaString(); !strings.HasPrefix(d, "~ (too few trials)") {
		t.Errorf("1 trial against 6: delta %q; want too few trials", d)
	}
}
