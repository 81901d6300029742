package results

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
)

// dirFixtures is a small directory's worth of runs: base runs with
// intervals, a pause fault with intervals, and short sweeps.
func dirFixtures() []fixture {
	fs := baseFixtures(4)[2:5] // setnx, fencing, redlock
	for _, f := range verdictFixtures(true) {
		if f.strategy == "setnx" || f.strategy == "etcd" {
			fs = append(fs, f)
		}
	}
	for _, f := range sweepFixtures() {
		if f.strategy != "fencing" {
			fs = append(fs, f)
		}
	}
	return fs
}

// shared is one directory written from dirFixtures, for the tests that
// only read it: writing it is the slow part under -race.
var shared struct {
	once sync.Once
	dir  string
	runs []Run
	err  error
}

func sharedDir(t *testing.T) (string, []Run) {
	t.Helper()
	shared.once.Do(func() {
		shared.dir, shared.err = os.MkdirTemp("", "results-test-")
		if shared.err != nil {
			return
		}
		shared.runs = makeRuns(dirFixtures())
		shared.err = WriteDir(shared.dir, shared.runs, testMeta())
	})
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	return shared.dir, shared.runs
}

func TestMain(m *testing.M) {
	flag.Parse()
	code := m.Run()
	if shared.dir != "" {
		os.RemoveAll(shared.dir)
	}
	os.Exit(code)
}

func TestWriteDir(t *testing.T) {
	dir, runs := sharedDir(t)
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, e := range entries {
		have[e.Name()] = true
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("temporary file %s left behind", e.Name())
		}
		info, _ := e.Info()
		if info.Mode().Perm() != 0o644 {
			t.Errorf("%s has mode %v; want 0644", e.Name(), info.Mode().Perm())
		}
	}
	want := []string{SummaryJSONFile, SummaryCSVFile, BenchFile, VerdictsFile, MetaFile, ReportFile,
		"setnx.base.none.unfenced.acquire.hlog", "etcd.verdicts.pause.fenced.total.hlog",
		"setnx.sweep.none.unfenced.5.release.hlog",
		"latency-spectrum-acquire.png", "latency-spectrum-total.svg", "throughput-contention.png",
		"latency-throughput.png", "safety-grid.png", "safety-grid.svg", "latency-timeline-pause.png"}
	for _, name := range want {
		if !have[name] {
			t.Errorf("%s missing from the run directory", name)
		}
	}
	if got, want := countSuffix(have, ".hlog"), 4*len(runs); got != want {
		t.Errorf("%d interval logs; want %d (one per run and phase)", got, want)
	}

	report, err := os.ReadFile(filepath.Join(dir, ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "report.golden.md", report)

	// Every chart the report links to exists.
	for _, line := range strings.Split(string(report), "\n") {
		if _, rest, ok := strings.Cut(line, "]("); ok && strings.HasPrefix(line, "![") {
			name := strings.TrimSuffix(rest, ")")
			if !have[name] {
				t.Errorf("report links to %s, which was not written", name)
			}
		}
	}

	verdicts, err := os.Open(filepath.Join(dir, VerdictsFile))
	if err != nil {
		t.Fatal(err)
	}
	defer verdicts.Close()
	vs, err := ReadJSON(verdicts)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(vs), len(VerdictRuns(summariesOf(runs))); got != want {
		t.Errorf("verdicts.json has %d runs; want %d", got, want)
	}
}

func countSuffix(names map[string]bool, suffix string) int {
	n := 0
	for name := range names {
		if strings.HasSuffix(name, suffix) {
			n++
		}
	}
	return n
}

func TestLoadDirRoundTrip(t *testing.T) {
	dir, runs := sharedDir(t)
	meta := testMeta()
	got, gotMeta, err := LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !gotMeta.Date.Equal(meta.Date) || gotMeta.Title != meta.Title || gotMeta.Command != meta.Command ||
		!reflect.DeepEqual(gotMeta.Host, meta.Host) || !reflect.DeepEqual(gotMeta.Notes, meta.Notes) {
		t.Errorf("meta = %+v; want %+v", gotMeta, meta)
	}
	if len(got) != len(runs) {
		t.Fatalf("loaded %d runs; want %d", len(got), len(runs))
	}
	for i := range runs {
		g, w := got[i], runs[i]
		if !reflect.DeepEqual(g.Summary, normalized(w.Summary)) {
			t.Errorf("run %d summary: got %v; want %v", i, g.Summary.String(), w.Summary.String())
		}
		if wantIv := len(w.Intervals); len(g.Intervals) != wantIv {
			t.Errorf("run %d (%s): %d intervals; want %d", i, w.Summary.ID(), len(g.Intervals), len(w.Intervals))
		}
		for p := Phase(0); p < NumPhases; p++ {
			if gc, wc := g.Total[p].TotalCount(), w.Total[p].TotalCount(); gc != wc {
				t.Errorf("run %d %s: total count %d; want %d", i, p, gc, wc)
			}
			if gq, wq := g.Total[p].ValueAtQuantile(99), w.Total[p].ValueAtQuantile(99); gq != wq {
				t.Errorf("run %d %s: p99 %d; want %d", i, p, gq, wq)
			}
			for j := range g.Intervals {
				if g.Intervals[j].Hists[p] == nil {
					t.Errorf("run %d interval %d: %s histogram nil", i, j, p)
				}
			}
		}
	}
}

// TestRender re-draws a directory from its data files alone: the report
// must come out byte for byte as WriteDir wrote it.
func TestRender(t *testing.T) {
	dir := t.TempDir()
	if err := WriteDir(dir, makeRuns(dirFixtures()), testMeta()); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(filepath.Join(dir, ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	var charts []string
	for _, name := range []string{"latency-spectrum-total.png", "safety-grid.png", "latency-timeline-pause.png"} {
		charts = append(charts, filepath.Join(dir, name))
		if err := os.Remove(filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Remove(filepath.Join(dir, ReportFile)); err != nil {
		t.Fatal(err)
	}
	if err := Render(dir); err != nil {
		t.Fatal(err)
	}
	after, err := os.ReadFile(filepath.Join(dir, ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		t.Errorf("report.md after Render differs from WriteDir's:\n%s\n---\n%s", after, before)
	}
	for _, path := range charts {
		if _, err := os.Stat(path); err != nil {
			t.Errorf("Render did not redraw %s: %v", filepath.Base(path), err)
		}
	}
}

func TestRenderMissingSummary(t *testing.T) {
	err := Render(t.TempDir())
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Render of an empty directory: got %v; want an error wrapping os.ErrNotExist", err)
	}
}

// TestWriteDirAccumulates writes after every run, as `lockbench run`
// does, and checks the directory is complete and readable at each step.
func TestWriteDirAccumulates(t *testing.T) {
	dir := t.TempDir()
	all := makeRuns(baseFixtures(2)[:3])
	firstLog := filepath.Join(dir, HlogName(all[0].Summary.ID(), Total))
	var firstInfo os.FileInfo
	for n := 1; n <= len(all); n++ {
		if err := WriteDir(dir, all[:n], testMeta()); err != nil {
			t.Fatal(err)
		}
		info, err := os.Stat(firstLog)
		if err != nil {
			t.Fatal(err)
		}
		if firstInfo == nil {
			firstInfo = info
		} else if !os.SameFile(firstInfo, info) {
			t.Errorf("after run %d: the first run's interval log was rewritten; want it kept", n)
		}
		got, _, err := LoadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != n {
			t.Errorf("after run %d: LoadDir found %d runs; want %d", n, len(got), n)
		}
		report, _ := os.ReadFile(filepath.Join(dir, ReportFile))
		for _, r := range all[:n] {
			if !strings.Contains(string(report), "| "+r.Summary.Strategy+" ") {
				t.Errorf("after run %d: report lacks %s", n, r.Summary.Strategy)
			}
		}
		if strings.Contains(string(report), "## Verdicts") {
			t.Errorf("after run %d: report has a verdict table without faults", n)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, VerdictsFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("verdicts.json written without faults (stat: %v)", err)
	}

	// A different run under the same name (a new invocation into the same
	// directory) replaces the old log.
	again := makeRuns(baseFixtures(2)[:1])
	again[0].Summary.PaymentsPerSec++
	if err := WriteDir(dir, again, testMeta()); err != nil {
		t.Fatal(err)
	}
	if info, err := os.Stat(firstLog); err != nil || os.SameFile(firstInfo, info) {
		t.Errorf("changed run: interval log kept (stat error %v); want it rewritten", err)
	}
}

func TestWriteFileAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "summary.json")
	if err := writeFileAtomic(path, func(w io.Writer) error {
		_, err := io.WriteString(w, "old")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	// A writer failing half-way must leave the old file and no temporary.
	boom := errors.New("boom")
	err := writeFileAtomic(path, func(w io.Writer) error {
		io.WriteString(w, "half of the new")
		return boom
	})
	if !errors.Is(err, boom) {
		t.Errorf("got error %v; want one wrapping %v", err, boom)
	}
	if got, _ := os.ReadFile(path); string(got) != "old" {
		t.Errorf("file holds %q after a failed write; want %q", got, "old")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("directory holds %d files; want 1 (no temporary left)", len(entries))
	}
}
