package report

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/lockbench/lockbench/results"
	"github.com/lockbench/lockbench/results/resultstest"
)

func TestVerdictRuns(t *testing.T) {
	ss := resultstest.Summaries(append(resultstest.BaseFixtures(0), resultstest.VerdictFixtures(false)...))
	got := results.VerdictRuns(ss)
	if want := len(resultstest.VerdictFixtures(false)); len(got) != want {
		t.Fatalf("got %d verdict runs; want %d (every run of the faulted scenario)", len(got), want)
	}
	for _, s := range got {
		if s.Scenario != "verdicts" {
			t.Errorf("verdict run %s from scenario %q; want only scenario %q", s.String(), s.Scenario, "verdicts")
		}
	}
	if got := results.VerdictRuns(resultstest.Summaries(resultstest.BaseFixtures(0))); got != nil {
		t.Errorf("VerdictRuns without faults = %d runs; want nil", len(got))
	}
}

func TestVerdictTable(t *testing.T) {
	ss := resultstest.Summaries(resultstest.VerdictFixtures(false))
	var buf bytes.Buffer
	if err := VerdictTable(&buf, ss); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if got, want := len(lines), len(ss)+2; got != want {
		t.Fatalf("got %d lines; want %d (header, rule, one per run):\n%s", got, want, buf.String())
	}
	cells := func(line string) []string {
		var out []string
		for _, c := range strings.Split(strings.Trim(line, "|"), "|") {
			out = append(out, strings.TrimSpace(c))
		}
		return out
	}
	header := cells(lines[0])
	wantHeader := []string{"strategy", "fault", "fencing", "verdict", "duplicates", "lost", "overdrafts",
		"lost updates", "stale accepted", "overlaps", "stale rejected", "availability", "unsafe strikes"}
	if strings.Join(header, ",") != strings.Join(wantHeader, ",") {
		t.Errorf("header = %q; want %q", header, wantHeader)
	}
	tests := []struct {
		line int
		want []string
		why  string
	}{
		// Rows sorted by fault, then strategy order, unfenced first.
		{2, []string{"setnx", "none", "off", "SAFE"}, "fault none first, setnx first"},
		{4, []string{"redlock", "none", "off", "SAFE"}, "redlock unfenced before fenced"},
		{8, []string{"setnx", "pause", "off", "**UNSAFE**", "9"}, "duplicates make it unsafe"},
		{9, []string{"fencing", "pause", "on", "SAFE", "0", "0", "0", "0", "0", "8", "8", "100%"}, "overlaps alone are safe"},
		{12, []string{"etcd", "pause", "off", "**UNSAFE**", "3", "0", "0", "2500"}, "lost updates counted"},
		{14, []string{"setnx", "kill-node", "off", "SAFE", "0", "0", "0", "0", "0", "0", "0", "62%"}, "unavailable but safe"},
	}
	for _, tt := range tests {
		got := cells(lines[tt.line])
		for i, w := range tt.want {
			if got[i] != w {
				t.Errorf("line %d (%s): cell %d = %q; want %q\n%s", tt.line, tt.why, i, got[i], w, lines[tt.line])
			}
		}
	}
}

func TestTable(t *testing.T) {
	tests := []struct {
		name     string
		ss       []results.Summary
		wantCols []string
		noCols   []string
		wantText []string
	}{
		{
			// One scenario, no fault: no scenario or fault column.
			name:     "base",
			ss:       resultstest.Summaries(resultstest.BaseFixtures(0)),
			wantCols: []string{"strategy", "payments/s", "acq p50", "acq p99", "acq p99.9", "duplicates", "lost", "overdrafts", "overlaps", "stale rej", "stale acc", "unprocessed", "errors"},
			noCols:   []string{"scenario", "fault", "offered/s"},
			wantText: []string{"pg-onconflict", "refused=1 other=3 serialization=2", "timeout=2", "UNSAFE"},
		},
		{
			// Faults and fenced/unfenced runs of one strategy.
			name:     "verdicts",
			ss:       resultstest.Summaries(resultstest.VerdictFixtures(false)),
			wantCols: []string{"fault"},
			noCols:   []string{"scenario"},
			wantText: []string{"etcd (fenced)", "etcd (unfenced)", "kill-node"},
		},
		{
			// A sweep: rows told apart by offered rate and contenders.
			name:     "sweep",
			ss:       resultstest.Summaries(resultstest.SweepFixtures()),
			wantCols: []string{"scenario", "offered/s", "contenders"},
			wantText: []string{"8000"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := Table(&buf, tt.ss); err != nil {
				t.Fatal(err)
			}
			out := buf.String()
			header, _, _ := strings.Cut(out, "\n")
			for _, c := range tt.wantCols {
				if !strings.Contains(header, c) {
					t.Errorf("header %q lacks %q", header, c)
				}
			}
			for _, c := range tt.noCols {
				if strings.Contains(header, c) {
					t.Errorf("header %q has %q; want it left out", header, c)
				}
			}
			for _, s := range tt.wantText {
				if !strings.Contains(out, s) {
					t.Errorf("table lacks %q:\n%s", s, out)
				}
			}
			if got, want := strings.Count(out, "\n"), len(tt.ss)+1; got != want {
				t.Errorf("got %d lines; want %d", got, want)
			}
		})
	}
}

func TestHumanUnits(t *testing.T) {
	durations := []struct {
		ns   int64
		want string
	}{
		{0, "0"},
		{850, "850ns"},
		{1000, "1.00µs"},
		{12345, "12.3µs"},
		{123456, "123µs"},
		{4560000, "4.56ms"},
		{999999999, "1000ms"},
		{1200000000, "1.20s"},
		// A negative duration (a clock step) keeps its sign.
		{-4560000, "-4.56ms"},
	}
	for _, tt := range durations {
		if got := results.FormatDuration(tt.ns); got != tt.want {
			t.Errorf("FormatDuration(%d) = %q; want %q", tt.ns, got, tt.want)
		}
	}
	percents := []struct {
		f    float64
		want string
	}{
		{1, "100%"},
		{0.99999, "99.99%"}, // never rounded up to a reassuring 100%
		{0.62, "62%"},
		{0, "0%"},
	}
	for _, tt := range percents {
		if got := fmtPercent(tt.f); got != tt.want {
			t.Errorf("fmtPercent(%v) = %q; want %q", tt.f, got, tt.want)
		}
	}
}

func ExampleTable() {
	ss := []results.Summary{
		{Strategy: "setnx", PaymentsPerSec: 960, Payments: 1000, Processed: 1000,
			Latency: map[string]results.Latency{"acquire": {P50: 250e3, P99: 1.2e6, P999: 4.5e6, Count: 2000}}},
		{Strategy: "nolock", PaymentsPerSec: 980, Payments: 1000, Processed: 1000, Duplicates: 412, Overdrafts: 3,
			Errors: map[string]int64{"timeout": 2}},
	}
	for i := range ss {
		ss[i].Finish()
	}
	// 2,000 acquires: 20 lie beyond p99, 2 beyond p99.9, too few to
	// report it (MinTailSamples); nolock recorded none.
	Table(os.Stdout, ss)
	// Output:
	// strategy  payments/s  acq p50  acq p99  acq p99.9  duplicates  lost  overdrafts  overlaps  stale rej  stale acc  unprocessed  errors     verdict
	// setnx     960         250µs    1.20ms   —          0           0     0           0         0          0          0            0          SAFE
	// nolock    980         —        —        —          412         0     3           0         0          0          0            timeout=2  UNSAFE
}

func ExampleVerdictTable() {
	ss := []results.Summary{
		{Strategy: "setnx", Fault: "pause", Payments: 100, Processed: 100, Duplicates: 9, Overlaps: 9, Strikes: 1, UnsafeStrikes: 1},
		{Strategy: "fencing", Fault: "pause", Fencing: true, Payments: 100, Processed: 100, Overlaps: 8, StaleRejected: 8, Strikes: 1},
	}
	for i := range ss {
		ss[i].Finish()
	}
	VerdictTable(os.Stdout, ss)
	// Output:
	// | strategy | fault | fencing | verdict    | duplicates | lost | overdrafts | lost updates | stale accepted | overlaps | stale rejected | availability | unsafe strikes |
	// | -------- | ----- | ------- | ---------- | ---------: | ---: | ---------: | -----------: | -------------: | -------: | -------------: | -----------: | -------------: |
	// | setnx    | pause | off     | **UNSAFE** |          9 |    0 |          0 |            0 |              0 |        9 |              0 |         100% |            1/1 |
	// | fencing  | pause | on      | SAFE       |          0 |    0 |          0 |            0 |              0 |        8 |              8 |         100% |            0/1 |
}
