package report

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/lockbench/lockbench/results"
	"github.com/lockbench/lockbench/results/resultstest"
)

// dirFixtures is a small directory's worth of runs: base runs with
// intervals, a pause fault with intervals, and short sweeps.
func dirFixtures() []resultstest.Fixture {
	fs := resultstest.BaseFixtures(4)[2:5] // setnx, fencing, redlock
	for _, f := range resultstest.VerdictFixtures(true) {
		if f.Strategy == "setnx" || f.Strategy == "etcd" {
			fs = append(fs, f)
		}
	}
	for _, f := range resultstest.SweepFixtures() {
		if f.Strategy != "fencing" {
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
	runs []results.Run
	err  error
}

func sharedDir(t *testing.T) (string, []results.Run) {
	t.Helper()
	shared.once.Do(func() {
		shared.dir, shared.err = os.MkdirTemp("", "results-test-")
		if shared.err != nil {
			return
		}
		shared.runs = resultstest.MakeRuns(dirFixtures())
		shared.err = WriteDir(shared.dir, shared.runs, resultstest.TestMeta())
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
	have := map[string]bool{} // every file, by its path relative to dir
	err := filepath.WalkDir(dir, func(path string, e os.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		have[filepath.ToSlash(rel)] = true
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("temporary file %s left behind", rel)
		}
		info, _ := e.Info()
		if info.Mode().Perm() != 0o644 {
			t.Errorf("%s has mode %v; want 0644", rel, info.Mode().Perm())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{results.SummaryJSONFile, results.SummaryCSVFile, results.BenchFile, results.VerdictsFile, results.MetaFile, results.ReportFile,
		"hlog/setnx.base.none.unfenced.acquire.hlog", "hlog/etcd.verdicts.pause.fenced.total.hlog",
		"hlog/setnx.sweep.none.unfenced.5.release.hlog",
		"charts/latency-spectrum-acquire.png", "charts/latency-spectrum-total.svg", "charts/throughput-contention.png",
		"charts/latency-throughput.png", "charts/safety-grid.png", "charts/safety-grid.svg", "charts/latency-timeline-pause.png"}
	for _, name := range want {
		if !have[name] {
			t.Errorf("%s missing from the run directory", name)
		}
	}
	if got, want := countPrefix(have, "hlog/", ".hlog"), 4*len(runs); got != want {
		t.Errorf("%d interval logs in hlog/; want %d (one per run and phase)", got, want)
	}

	report, err := os.ReadFile(filepath.Join(dir, results.ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	resultstest.Golden(t, "report.golden.md", report)

	// Every chart the report links to exists, by its path from report.md.
	links := reportLinks(report)
	if len(links) == 0 {
		t.Errorf("report.md links no chart")
	}
	for _, name := range links {
		if !have[name] {
			t.Errorf("report links to %s, which was not written", name)
		}
	}

	verdicts, err := os.Open(filepath.Join(dir, results.VerdictsFile))
	if err != nil {
		t.Fatal(err)
	}
	defer verdicts.Close()
	vs, err := results.ReadJSON(verdicts)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(vs), len(results.VerdictRuns(results.SummariesOf(runs))); got != want {
		t.Errorf("verdicts.json has %d runs; want %d", got, want)
	}
}

// countPrefix counts the names in names under dir (ending in "/") with suffix.
func countPrefix(names map[string]bool, dir, suffix string) int {
	n := 0
	for name := range names {
		if strings.HasPrefix(name, dir) && strings.HasSuffix(name, suffix) {
			n++
		}
	}
	return n
}

// reportLinks are the targets of report.md's chart images and SVG links.
func reportLinks(report []byte) []string {
	var out []string
	for _, line := range strings.Split(string(report), "\n") {
		for rest := line; ; {
			_, after, ok := strings.Cut(rest, "](")
			if !ok {
				break
			}
			target, tail, _ := strings.Cut(after, ")")
			if strings.HasSuffix(target, ".png") || strings.HasSuffix(target, ".svg") {
				out = append(out, target)
			}
			rest = tail
		}
	}
	return out
}

func TestLoadDirRoundTrip(t *testing.T) {
	dir, runs := sharedDir(t)
	meta := resultstest.TestMeta()
	got, gotMeta, err := results.LoadDir(dir)
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
		if !reflect.DeepEqual(g.Summary, results.NormalizedRuns([]results.Run{w})[0].Summary) {
			t.Errorf("run %d summary: got %v; want %v", i, g.Summary.String(), w.Summary.String())
		}
		if wantIv := len(w.Intervals); len(g.Intervals) != wantIv {
			t.Errorf("run %d (%s): %d intervals; want %d", i, w.Summary.ID(), len(g.Intervals), len(w.Intervals))
		}
		for p := results.Phase(0); p < results.NumPhases; p++ {
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

// TestRender re-draws a directory from its data files alone: the report,
// the page and every chart must come out byte for byte as WriteDir wrote
// them (Render reads the histograms back as results.Sparse, the spectra's
// runs alone).
func TestRender(t *testing.T) {
	dir := t.TempDir()
	if err := WriteDir(dir, resultstest.MakeRuns(dirFixtures()), resultstest.TestMeta()); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(filepath.Join(dir, results.ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	drawn := map[string][]byte{}
	names, err := filepath.Glob(filepath.Join(dir, results.ChartsDir, "*"))
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range append(names, filepath.Join(dir, results.ReportHTMLFile)) {
		if drawn[file], err = os.ReadFile(file); err != nil {
			t.Fatal(err)
		}
	}
	if len(names) == 0 {
		t.Fatal("WriteDir drew no chart")
	}
	var charts []string
	for _, name := range []string{"latency-spectrum-total.png", "safety-grid.png", "latency-timeline-pause.png"} {
		file := filepath.Join(dir, results.ChartsDir, name)
		charts = append(charts, file)
		if err := os.Remove(file); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Remove(filepath.Join(dir, results.ReportFile)); err != nil {
		t.Fatal(err)
	}
	if err := Render(context.Background(), dir); err != nil {
		t.Fatal(err)
	}
	after, err := os.ReadFile(filepath.Join(dir, results.ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		t.Errorf("report.md after Render differs from WriteDir's:\n%s\n---\n%s", after, before)
	}
	for _, file := range charts {
		if _, err := os.Stat(file); err != nil {
			t.Errorf("Render did not redraw %s: %v", filepath.Base(file), err)
		}
	}
	for file, want := range drawn {
		got, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s after Render differs from WriteDir's", filepath.Base(file))
		}
	}
}

// Render stops once its context is done: interrupted before it starts
// (`lockbench report` after Ctrl-C) it returns the context's error and
// writes nothing, leaving no temporary file.
func TestRenderInterrupted(t *testing.T) {
	dir := t.TempDir()
	if err := WriteDir(dir, resultstest.MakeRuns(dirFixtures()), resultstest.TestMeta()); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, results.ReportFile)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Render(ctx, dir); !errors.Is(err, context.Canceled) {
		t.Errorf("Render with a cancelled context: got %v; want context.Canceled", err)
	}
	if _, err := os.Stat(filepath.Join(dir, results.ReportFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("report.md after an interrupted Render: %v; want it not written", err)
	}
	if tmp, _ := filepath.Glob(filepath.Join(dir, ".*.tmp-*")); len(tmp) > 0 {
		t.Errorf("temporary files left: %v", tmp)
	}
}

func TestRenderMissingSummary(t *testing.T) {
	err := Render(context.Background(), t.TempDir())
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Render of an empty directory: got %v; want an error wrapping os.ErrNotExist", err)
	}
}

// TestWriteDataAccumulates writes the data after every run, as a command
// does, and checks the directory is readable at each step, with neither
// charts nor report until RenderRuns.
func TestWriteDataAccumulates(t *testing.T) {
	dir := t.TempDir()
	all := resultstest.MakeRuns(resultstest.BaseFixtures(2)[:3])
	firstLog := filepath.Join(dir, results.HlogDir, results.HlogName(all[0].Summary.ID(), results.Total))
	var firstInfo os.FileInfo
	for n := 1; n <= len(all); n++ {
		if err := results.WriteData(dir, all[:n], resultstest.TestMeta()); err != nil {
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
		got, _, err := results.LoadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != n {
			t.Errorf("after run %d: LoadDir found %d runs; want %d", n, len(got), n)
		}
		for _, name := range []string{results.ReportFile, results.ChartsDir} {
			if _, err := os.Stat(filepath.Join(dir, name)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("after run %d: %s exists (stat: %v); want it drawn only by RenderRuns", n, name, err)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(dir, results.VerdictsFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("verdicts.json written without faults (stat: %v)", err)
	}
	if err := RenderRuns(dir, all, resultstest.TestMeta()); err != nil {
		t.Fatal(err)
	}
	report, _ := os.ReadFile(filepath.Join(dir, results.ReportFile))
	for _, r := range all {
		if !strings.Contains(string(report), "| "+r.Summary.Strategy+" ") {
			t.Errorf("report lacks %s", r.Summary.Strategy)
		}
	}
	if strings.Contains(string(report), "## Verdicts") {
		t.Errorf("report has a verdict table without faults")
	}

	// A different run under the same name (a new invocation into the same
	// directory) replaces the old log.
	again := resultstest.MakeRuns(resultstest.BaseFixtures(2)[:1])
	again[0].Summary.PaymentsPerSec++
	if err := results.WriteData(dir, again, resultstest.TestMeta()); err != nil {
		t.Fatal(err)
	}
	if info, err := os.Stat(firstLog); err != nil || os.SameFile(firstInfo, info) {
		t.Errorf("changed run: interval log kept (stat error %v); want it rewritten", err)
	}
}

// TestDirLayout writes a directory of several runs the way a command does
// (WriteData after each run, RenderRuns at the end) and checks what is
// where at each stage: a short top level, the interval logs in hlog/, and
// the charts in charts/ only once rendered.
func TestDirLayout(t *testing.T) {
	dir := t.TempDir()
	runs := resultstest.MakeRuns(dirFixtures())
	data := []string{results.BenchFile, results.HlogDir, results.MetaFile, results.SummaryCSVFile, results.SummaryJSONFile, results.VerdictsFile}
	rendered := append([]string{results.ChartsDir, results.ReportFile, results.ReportHTMLFile}, data...)
	sort.Strings(rendered)
	tests := []struct {
		stage  string
		write  func() error
		top    []string // every entry at the top, sorted
		hlogs  int      // files in hlog/
		charts int      // files in charts/
	}{
		// Half the runs finished: their data, nothing drawn.
		{"after half the runs", func() error { return results.WriteData(dir, runs[:len(runs)/2], resultstest.TestMeta()) },
			data, 4 * (len(runs) / 2), 0},
		// Every run finished: still nothing drawn.
		{"after every run", func() error { return results.WriteData(dir, runs, resultstest.TestMeta()) },
			data, 4 * len(runs), 0},
		// The command ends: report.md and report.html at the top, six charts of two files each.
		{"after RenderRuns", func() error { return RenderRuns(dir, runs, resultstest.TestMeta()) },
			rendered, 4 * len(runs), 2 * 6},
	}
	for _, tt := range tests {
		if err := tt.write(); err != nil {
			t.Fatalf("%s: %v", tt.stage, err)
		}
		if got := entries(t, dir); !reflect.DeepEqual(got, tt.top) {
			t.Errorf("%s: top level = %v; want %v", tt.stage, got, tt.top)
		}
		if got := len(entries(t, filepath.Join(dir, results.HlogDir))); got != tt.hlogs {
			t.Errorf("%s: %d files in hlog/; want %d", tt.stage, got, tt.hlogs)
		}
		if got := len(entries(t, filepath.Join(dir, results.ChartsDir))); got != tt.charts {
			t.Errorf("%s: %d files in charts/; want %d", tt.stage, got, tt.charts)
		}
	}
	if got := results.LayoutOf(dir); got != (results.Layout{Hlog: results.HlogDir, Charts: results.ChartsDir}) {
		t.Errorf("LayoutOf = %+v; want hlog/ and charts/", got)
	}
}

// entries lists dir's entries by name, sorted; a missing dir has none.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	names := make([]string, len(es))
	for i, e := range es {
		names[i] = e.Name()
	}
	return names
}

// TestFlatLayout reads and renders a directory in the flat layout of
// lockbench before hlog/ and charts/ (everything at the top), as the
// committed results/reference was until 2026-12: LoadDir finds its histograms, and
// Render draws its charts at the top, where its report links them.
func TestFlatLayout(t *testing.T) {
	runs := resultstest.MakeRuns(dirFixtures())
	tests := []struct {
		name   string
		layout results.Layout // what the directory is written in
		charts string         // where Render must draw the charts
	}{
		// Today's layout, for comparison.
		{"standard", results.Layout{Hlog: results.HlogDir, Charts: results.ChartsDir}, results.ChartsDir},
		// The old one: interval logs at the top, no hlog/.
		{"flat", results.Layout{}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := results.WriteDataLayout(dir, runs, resultstest.TestMeta(), tt.layout); err != nil {
				t.Fatal(err)
			}
			if got := results.LayoutOf(dir); got != tt.layout {
				t.Errorf("LayoutOf = %+v; want %+v", got, tt.layout)
			}
			got, _, err := results.LoadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(runs) {
				t.Fatalf("LoadDir: %d runs; want %d", len(got), len(runs))
			}
			for i := range runs {
				for p := results.Phase(0); p < results.NumPhases; p++ {
					if g, w := got[i].Total[p].TotalCount(), runs[i].Total[p].TotalCount(); g != w {
						t.Errorf("run %d %s: %d values; want %d", i, p, g, w)
					}
				}
			}
			if err := Render(context.Background(), dir); err != nil {
				t.Fatal(err)
			}
			report, err := os.ReadFile(filepath.Join(dir, results.ReportFile))
			if err != nil {
				t.Fatal(err)
			}
			links := reportLinks(report)
			if len(links) == 0 {
				t.Errorf("report.md links no chart")
			}
			for _, link := range links {
				if got := path.Dir(link); got != path.Clean("./"+tt.charts) {
					t.Errorf("report links %s; want it in %q", link, tt.charts)
				}
				if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(link))); err != nil {
					t.Errorf("report links %s, which Render did not draw: %v", link, err)
				}
			}
			_, err = os.Stat(filepath.Join(dir, results.ChartsDir))
			if got, want := err == nil, tt.charts != ""; got != want {
				t.Errorf("charts/ exists = %v; want %v", got, want)
			}
		})
	}
}

func TestWriteFileAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "summary.json")
	if err := results.WriteFileAtomic(path, func(w io.Writer) error {
		_, err := io.WriteString(w, "old")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	// A writer failing half-way must leave the old file and no temporary.
	boom := errors.New("boom")
	err := results.WriteFileAtomic(path, func(w io.Writer) error {
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
