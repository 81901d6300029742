package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockbench/lockbench/loadgen"
	"github.com/lockbench/lockbench/report"
	"github.com/lockbench/lockbench/results"
)

// Bad trial, re-run and compare input exits 2 with one line naming the
// flag, before any server starts.
func TestTrialsBadInput(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"zero trials", []string{"run", "--trials", "0"}, "-trials"},
		{"trials not a number", []string{"verdicts", "--trials", "many"}, "-trials"},
		{"too many trials", []string{"matrix", "--trials", "1001"}, "-trials"},
		{"zero sweep trials", []string{"matrix", "--sweep-trials", "0"}, "--sweep-trials"},
		{"row without from", []string{"run", "--row", "2"}, "--row"},
		{"from a missing directory", []string{"run", "--from", "/nonexistent/run"}, "--from"},
		{"interval too short", []string{"run", "--interval", "1ms"}, "-interval"},
		{"bad seed", []string{"verdicts", "--seed", "x"}, "-seed"},
		{"compare one directory", []string{"compare", "."}, "compare"},
		{"compare bad threshold", []string{"compare", "--fail-on-regression", "-1", ".", "."}, "-fail-on-regression"},
		{"compare a file", []string{"compare", "/etc/hostname", "."}, "compare"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			err := Run(context.Background(), tc.args, &out, &errb)
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

// readSummaries reads dir's summary.json.
func readSummaries(t *testing.T, dir string) []results.Summary {
	t.Helper()
	ss, _, err := report.ReadSummaries(dir)
	if err != nil {
		t.Fatal(err)
	}
	return ss
}

// `lockbench run --trials 3` against a local Redis: three summaries, trial
// 1…3 with seeds 1…3; an acquire p99.9 of 1,000 samples is null with its
// count beside it; aggregate.json has the cell with the range of three
// trials; and `lockbench compare` of two such directories prints the
// table with its significance ("too few trials" for 3 + 3).
func TestRunTrials(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Redis node; skipped with -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	dirs := [2]string{filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")}
	for i, dir := range dirs {
		var out, errb bytes.Buffer
		args := []string{"run", "--strategy", "setnx", "--payments", "500", "--trials", "3", "--json", "--out", dir}
		if i == 1 {
			args = append(args, "--seed", "11")
		}
		if err := Run(ctx, args, &out, &errb); err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, errb.String())
		}
		var raw []map[string]any
		if err := json.Unmarshal(out.Bytes(), &raw); err != nil {
			t.Fatalf("--json output: %v", err)
		}
		if len(raw) != 3 {
			t.Fatalf("%d summaries; want 3 (one per trial)", len(raw))
		}
		base := []float64{1, 11}[i]
		for k, s := range raw {
			params := s["params"].(map[string]any)
			if s["trial"] != float64(k+1) || params["seed"] != base+float64(k) {
				t.Errorf("summary %d: trial %v, seed %v; want %d and %g", k, s["trial"], params["seed"], k+1, base+float64(k))
			}
			acq := s["latency"].(map[string]any)["acquire"].(map[string]any)
			if acq["p999"] != nil || acq["count"] != 1000.0 {
				t.Errorf("summary %d: acquire p999 %v with count %v; want null beside count 1000", k, acq["p999"], acq["count"])
			}
			if acq["p99"] == nil {
				t.Errorf("summary %d: acquire p99 null with 1000 samples; want a number", k)
			}
		}
		f, err := os.Open(filepath.Join(dir, results.AggregateFile))
		if err != nil {
			t.Fatal(err)
		}
		cells, err := results.ReadAggregate(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		if len(cells) != 1 || cells[0].Trials != 3 || cells[0].PaymentsPerSec.CI || cells[0].PaymentsPerSec.N != 3 {
			t.Errorf("aggregate.json = %+v; want one cell of 3 trials with a range, not a CI", cells)
		}
	}
	var out, errb bytes.Buffer
	err := Run(ctx, []string{"compare", dirs[0], dirs[1]}, &out, &errb)
	if code := ExitCode(err, &errb); code != 0 {
		t.Fatalf("compare: exit %d: %s", code, errb.String())
	}
	for _, want := range []string{"payments/s", "acquire p99", "setnx base none", "~ (too few trials) n=3+3", "verdicts"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("compare output lacks %q:\n%s", want, out.String())
		}
	}
}

// A row of a run directory runs again from its params: the same
// strategy, scenario and fault, and the very same params; a flag given
// with --from overrides the row.
func TestRunFrom(t *testing.T) {
	src := t.TempDir()
	var out, errb bytes.Buffer
	args := []string{"run", "--strategy", "nolock,mutex", "--payments", "200", "--instances", "2", "--hold", "uniform:1ms-2ms",
		"--seed", "7", "--accounts", "20", "--fencing", "off", "--out", src}
	if err := Run(context.Background(), args, &out, &errb); err != nil {
		t.Fatalf("%v\n%s", err, errb.String())
	}
	want := readSummaries(t, src)[1]
	cases := []struct {
		name   string
		extra  []string
		change func(p *results.Params)
	}{
		// Row 2 is mutex's: run again as it was.
		{"as it was", nil, nil},
		// A flag given beside --from wins.
		{"seed overridden", []string{"--seed", "9"}, func(p *results.Params) { p.Seed = 9 }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dst := t.TempDir()
			args := append([]string{"run", "--from", src, "--row", "2", "--out", dst}, tc.extra...)
			if err := Run(context.Background(), args, &out, &errb); err != nil {
				t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, errb.String())
			}
			got := readSummaries(t, dst)
			if len(got) != 1 {
				t.Fatalf("%d rows; want 1", len(got))
			}
			wantParams := want.Params
			if tc.change != nil {
				tc.change(&wantParams)
			}
			if got[0].Strategy != want.Strategy || got[0].Scenario != want.Scenario || got[0].Fault != want.Fault {
				t.Errorf("re-run is %s; want %s", got[0].String(), want.String())
			}
			if !reflect.DeepEqual(got[0].Params, wantParams) {
				t.Errorf("params:\n got %+v\nwant %+v", got[0].Params, wantParams)
			}
		})
	}
}

// `lockbench verdicts --trials 3` under pause: one cell per strategy ×
// fencing with its trials in aggregate.json, k/N with the Wilson interval;
// setnx loses safety in every trial (the strike is designed); the fault
// runs record 250ms intervals, readable back from their interval logs.
func TestVerdictsTrials(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Redis node and instance processes; skipped with -short")
	}
	// Some 15 s quiet: only a hang takes 5 minutes.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	dir := t.TempDir()
	var out, errb bytes.Buffer
	began := time.Now()
	err := Run(ctx, []string{"verdicts", "--trials", "3", "--strategy", "setnx", "--fault", "pause", "--out", dir}, &out, &errb)
	t.Logf("verdicts --trials 3 in %v", time.Since(began).Round(time.Millisecond))
	if err != nil {
		t.Fatalf("verdicts: %v\n%s", err, errb.String())
	}
	f, err := os.Open(filepath.Join(dir, results.AggregateFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cells, err := results.ReadAggregate(f)
	if err != nil {
		t.Fatal(err)
	}
	if len(cells) != 1 {
		t.Fatalf("%d cells; want 1 (setnx × pause)", len(cells))
	}
	c := cells[0]
	// Every trial is unsafe, but for one whose every strike missed (the
	// payment's other delivery never asked for the lock while it had
	// lapsed): that one is unknown, and no more than one of three.
	judged := c.Trials - c.UnknownTrials
	if c.Trials != 3 || c.UnsafeTrials != judged || judged < 2 || c.UnsafeRateCI95 != results.Wilson(judged, judged) {
		t.Errorf("cell: trials %d, unsafe %d, unknown %d, ci %v; want 3 trials, each judged one unsafe (at most one unknown), %v", c.Trials, c.UnsafeTrials, c.UnknownTrials, c.UnsafeRateCI95, results.Wilson(judged, judged))
	}
	for _, s := range readSummaries(t, dir) {
		if s.Unknown() && (s.Strikes == 0 || s.StrikesMissed != s.Strikes) {
			t.Errorf("trial %d unknown, strikes %d, missed %d: want unknown only with every strike missed (%s)", s.Trial, s.Strikes, s.StrikesMissed, s.Unjudged)
		}
		if t.Failed() {
			t.Logf("trial %d: verdict %s, duplicates %d, strikes %d (unsafe %d, missed %d), window %+v, events %+v", s.Trial, s.Verdict, s.Duplicates, s.Strikes, s.UnsafeStrikes, s.StrikesMissed, s.FaultWindow, s.FaultEvents)
		}
	}
	if want := fmt.Sprintf("%d/%d (", judged, judged); !strings.Contains(out.String(), want) {
		t.Errorf("the table lacks the unsafe trials %s…):\n%s", want, out.String())
	}
	runs, _, err := results.LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 3 {
		t.Fatalf("%d runs; want 3", len(runs))
	}
	for _, r := range runs {
		if got := time.Duration(r.Summary.Params.IntervalNs); got != loadgen.FaultInterval {
			t.Errorf("trial %d: params.interval_ns %s; want %s", r.Summary.Trial, got, loadgen.FaultInterval)
		}
		if len(r.Intervals) < 10 {
			t.Errorf("trial %d: %d intervals in its log; want ≥ 10 over a 3.5 s run", r.Summary.Trial, len(r.Intervals))
			continue
		}
		// The median interval: a tick a busy machine delays stretches
		// one, not the run's; the default would be 4 times as long.
		var lengths []time.Duration
		for _, iv := range r.Intervals[:len(r.Intervals)-1] { // the last ends with the run
			lengths = append(lengths, time.Duration(iv.EndNs-iv.StartNs))
		}
		slices.Sort(lengths)
		if d := lengths[len(lengths)/2]; d < loadgen.FaultInterval/2 || d > 2*loadgen.FaultInterval {
			t.Errorf("trial %d: median interval %s; want about %s", r.Summary.Trial, d, loadgen.FaultInterval)
		}
	}
}

// --dry-run prints the cells and an estimate, and runs nothing.
func TestDryRun(t *testing.T) {
	cases := []struct {
		args []string
		want []string
	}{
		{[]string{"verdicts", "--strategy", "setnx,fencing", "--fault", "pause", "--trials", "6"},
			[]string{"setnx × pause (fencing off)", "fencing × pause (fencing on)", "fencing [fencing=strict] × pause (fencing on)", "4 cells × 6 trials = 24 runs", "nothing was run"}},
		// run lists its cells as verdicts does: every strategy under each --fault.
		{[]string{"run", "--strategy", "setnx,mutex", "--fault", "none", "--fault", "pause", "--trials", "2"},
			[]string{"setnx × none (fencing off)", "mutex × pause (fencing off)", "run: 4 cells × 2 trials = 8 runs", "nothing was run"}},
		// plan's cells are its sweeps: their ramp, and the most they run.
		{[]string{"plan", "--strategy", "setnx,etcd", "--max-rate", "3000"},
			[]string{"setnx × none (fencing off)", "etcd × none (fencing on)", "while each rate holds: 250, 500, 1000, 2000, 3000;", "plan: 2 sweeps, each at most 7 rates", "nothing was run"}},
		{[]string{"matrix", "--quick"},
			[]string{"base (closed loop)", "contention", "rate sweep", "faults (the verdict table)", "etcd × pause (fencing on)"}},
		// The reference's shape: the sweeps at one trial, the rest at six;
		// failover cells need the replicated Redis.
		{[]string{"matrix", "--trials", "6", "--sweep-trials", "1", "--strategy", "setnx,etcd", "--fault", "none,failover"},
			[]string{"base (closed loop)                                2 cells × 6 trials", "contention (accounts [96 24 6 2 1])              10 cells × 1 trials",
				"not applicable, not run: setnx × failover (fencing off)", "setnx × none (fencing off)"}},
	}
	for _, tc := range cases {
		t.Run(tc.args[0], func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "never")
			var stdout, errb bytes.Buffer
			began := time.Now()
			if err := Run(context.Background(), append(tc.args, "--dry-run", "--out", out), &stdout, &errb); err != nil {
				t.Fatalf("%v\n%s", err, errb.String())
			}
			for _, w := range tc.want {
				if !strings.Contains(stdout.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, stdout.String())
				}
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("--dry-run created %s", out)
			}
			if d := time.Since(began); d > 2*time.Second {
				t.Errorf("--dry-run took %s; want it to start nothing", d)
			}
		})
	}
}

// beforeTrials writes a run directory as lockbench wrote them before
// trials: one setnx run, its summary.json rows without a trial field.
func beforeTrials(t *testing.T) string {
	t.Helper()
	dir := writeTrials(t, []float64{1000}, false)
	path := filepath.Join(dir, results.SummaryJSONFile)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var rows []map[string]any
	if err := json.Unmarshal(data, &rows); err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		delete(r, "trial")
	}
	if data, err = json.Marshal(rows); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// writeTrials writes a run directory of six setnx trials at the given
// payments/s, the last unsafe when unsafeLast.
func writeTrials(t *testing.T, pps []float64, unsafeLast bool) string {
	t.Helper()
	dir := t.TempDir()
	var runs []results.Run
	for k, v := range pps {
		s := results.Summary{Strategy: "setnx", Scenario: "base", Fault: "none", Trial: k + 1, Payments: 1000, Processed: 1000,
			PaymentsPerSec: v, Params: results.Params{Instances: 3, Workers: 8, Accounts: 100, Seed: int64(k + 1), Payments: 1000}}
		if unsafeLast && k == len(pps)-1 {
			s.Duplicates = 1
		}
		runs = append(runs, results.Run{Summary: s})
	}
	if err := results.WriteData(dir, runs, results.Meta{}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// `lockbench compare OLD NEW`: a significant slowdown beyond
// --fail-on-regression exits 4, within it 0; a verdict that turns unsafe
// exits 4; a directory from before trials reads.
func TestCompareDirs(t *testing.T) {
	old := writeTrials(t, []float64{1000, 1010, 990, 1005, 995, 1002}, false)
	slower := writeTrials(t, []float64{800, 810, 790, 805, 795, 802}, false)
	unsafe := writeTrials(t, []float64{1000, 1010, 990, 1005, 995, 1002}, true)
	cases := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"slower, reported", []string{old, slower}, 0, "-20.0% (p=0.002 n=6+6)"},
		{"slower than the threshold", []string{"--fail-on-regression", "10", old, slower}, 4, "payments/s"},
		{"slower within the threshold", []string{old, slower, "--fail-on-regression", "25"}, 0, "-20.0%"},
		{"turned unsafe", []string{"--fail-on-regression", "50", old, unsafe}, 4, "**UNSAFE 1/6**"},
		{"a directory from before trials", []string{beforeTrials(t), old}, 0, "~ (too few trials) n=1+6"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			err := Run(context.Background(), append([]string{"compare"}, tc.args...), &out, &errb)
			if code := ExitCode(err, &errb); code != tc.code {
				t.Fatalf("exit %d (%s); want %d", code, errb.String(), tc.code)
			}
			if !strings.Contains(out.String()+errb.String(), tc.want) {
				t.Errorf("output lacks %q:\n%s%s", tc.want, out.String(), errb.String())
			}
		})
	}
}
