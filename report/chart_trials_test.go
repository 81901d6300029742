package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/lockbench/lockbench/results"
	"github.com/lockbench/lockbench/results/resultstest"
)

// trialsOf repeats runs n times as trials 1…n, each trial's throughput a
// little apart so there is a spread to draw.
func trialsOf(runs []results.Run, n int) []results.Run {
	var out []results.Run
	for k := 1; k <= n; k++ {
		for _, r := range runs {
			r.Summary.Trial = k
			r.Summary.Params.Seed = int64(k)
			r.Summary.PaymentsPerSec *= 1 + 0.02*float64(k-2)
			out = append(out, r)
		}
	}
	return out
}

// With trials, every chart still draws, and says what its intervals are:
// error bars on the sweeps, k/N in the safety grid, a band in the
// spectrum, a line per trial in the timeline.
func TestChartsWithTrials(t *testing.T) {
	var runs []results.Run
	runs = append(runs, trialsOf(resultstest.MakeRuns(resultstest.BaseFixtures(0)), 3)...)
	runs = append(runs, trialsOf(resultstest.MakeRuns(resultstest.SweepFixtures()), 6)...)
	runs = append(runs, trialsOf(resultstest.MakeRuns(resultstest.VerdictFixtures(true)), 3)...)
	cs, err := BuildCharts(runs)
	if err != nil {
		t.Fatal(err)
	}
	captions := map[string]string{}
	for _, ch := range cs.Charts {
		captions[ch.Name] = ch.Caption
		var png bytes.Buffer
		if err := ch.WritePNG(&png); err != nil {
			t.Errorf("%s: %v", ch.Name, err)
		}
	}
	cases := []struct {
		chart, want string
	}{
		{"throughput-contention", "bars are their 95% confidence intervals"},
		{"latency-throughput", "Points are medians over trials"},
		{"latency-spectrum-acquire", "shaded band their range"},
		{"safety-grid", "k/N"},
		{"latency-timeline-pause", "one line per trial"},
	}
	for _, c := range cases {
		got, ok := captions[c.chart]
		if !ok {
			t.Errorf("%s not drawn; drawn: %v, missing: %v", c.chart, keysOf(captions), cs.Missing)
			continue
		}
		if !strings.Contains(got, c.want) {
			t.Errorf("%s caption = %q; want it to say %q", c.chart, got, c.want)
		}
	}
}

func keysOf(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
