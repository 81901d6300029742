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

	"github.com/lockbench/lockbench/results"
)

// runNoServer runs `lockbench run` into dir with the two strategies that
// need no server, quickly.
func runNoServer(t *testing.T, dir string) {
	t.Helper()
	var out, errb bytes.Buffer
	args := []string{"run", "--strategy", "nolock,mutex", "--payments", "200", "--out", dir}
	if err := Run(context.Background(), args, &out, &errb); err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, errb.String())
	}
}

// TestRunLayout checks that `lockbench run`, then `lockbench report` on
// its directory, leave the run directory the README describes: a short top level,
// an interval log per run and phase in hlog/, the charts in charts/, and
// a report.md whose links lead to them.
func TestRunLayout(t *testing.T) {
	dir := t.TempDir()
	top := []string{results.BenchFile, results.ChartsDir, results.HlogDir, results.MetaFile, results.ReportHTMLFile,
		results.ReportFile, results.SummaryCSVFile, results.SummaryJSONFile}
	tests := []struct {
		name string
		do   func(t *testing.T)
	}{
		// Two runs: four logs each, the two latency spectra as PNG and SVG.
		{"run", func(t *testing.T) { runNoServer(t, dir) }},
		// Redrawing from the data alone puts every file where it was.
		{"report", func(t *testing.T) {
			var out, errb bytes.Buffer
			if err := Run(context.Background(), []string{"report", dir}, &out, &errb); err != nil {
				t.Fatalf("report: %v\n%s", err, errb.String())
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.do(t)
			if got := entryNames(t, dir); !reflect.DeepEqual(got, top) {
				t.Errorf("top level = %v; want %v", got, top)
			}
			if got, want := len(entryNames(t, filepath.Join(dir, results.HlogDir))), 2*4; got != want {
				t.Errorf("%d files in hlog/; want %d", got, want)
			}
			if got, want := len(entryNames(t, filepath.Join(dir, results.ChartsDir))), 2*2; got != want {
				t.Errorf("%d files in charts/; want %d", got, want)
			}
			report, err := os.ReadFile(filepath.Join(dir, results.ReportFile))
			if err != nil {
				t.Fatal(err)
			}
			for _, link := range []string{"charts/latency-spectrum-acquire.png", "charts/latency-spectrum-total.svg"} {
				if !bytes.Contains(report, []byte("]("+link+")")) {
					t.Errorf("report.md does not link %s", link)
				}
			}
			// The machine's steal over the command, where /proc/stat reads:
			// in meta.json, and in report.md's header.
			if !procStatReadable() {
				return
			}
			data, err := os.ReadFile(filepath.Join(dir, results.MetaFile))
			if err != nil {
				t.Fatal(err)
			}
			var meta results.Meta
			if err := json.Unmarshal(data, &meta); err != nil {
				t.Fatal(err)
			}
			if p := meta.StealPercent; p == nil || !(*p >= 0 && *p <= 100) {
				t.Errorf("meta.json steal_percent = %v; want a percentage", p)
			}
			if !bytes.Contains(report, []byte("- **Steal:** ")) {
				t.Errorf("report.md has no Steal line")
			}
		})
	}
}

// TestRunDirRendersOnce adds runs to a runDir as a command does: each add
// writes the data files and draws nothing; the first close draws the
// charts and report.md, later ones do nothing.
func TestRunDirRendersOnce(t *testing.T) {
	src := t.TempDir()
	runNoServer(t, src)
	runs, _, err := results.LoadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	d, err := newRunDir(t.TempDir(), "run", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	report := filepath.Join(d.dir, results.ReportFile)
	tests := []struct {
		stage  string
		do     func() error
		runs   int  // in summary.json
		report bool // report.md exists
		charts int  // files in charts/
	}{
		// Closing before any run leaves nothing to draw, and draws nothing.
		{"close of an empty runDir", (&runDir{dir: d.dir}).close, 0, false, 0},
		{"first add", func() error { return d.add(runs[0]) }, 1, false, 0},
		{"second add", func() error { return d.add(runs[1]) }, 2, false, 0},
		{"close", d.close, 2, true, 4},
		// The report is removed: a second close must not draw it again.
		{"second close", func() error {
			if err := os.Remove(report); err != nil {
				return err
			}
			return d.close()
		}, 2, false, 4},
	}
	for _, tt := range tests {
		if err := tt.do(); err != nil {
			t.Fatalf("%s: %v", tt.stage, err)
		}
		got := 0
		if f, err := os.Open(filepath.Join(d.dir, results.SummaryJSONFile)); err == nil {
			ss, err := results.ReadJSON(f)
			f.Close()
			if err != nil {
				t.Fatalf("%s: %v", tt.stage, err)
			}
			got = len(ss)
		}
		if got != tt.runs {
			t.Errorf("%s: summary.json has %d runs; want %d", tt.stage, got, tt.runs)
		}
		_, err := os.Stat(report)
		if got := err == nil; got != tt.report {
			t.Errorf("%s: report.md exists = %v; want %v", tt.stage, got, tt.report)
		}
		if got := len(entryNames(t, filepath.Join(d.dir, results.ChartsDir))); got != tt.charts {
			t.Errorf("%s: %d files in charts/; want %d", tt.stage, got, tt.charts)
		}
	}
}

// entryNames lists dir's entries, sorted; a missing dir has none.
func entryNames(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.Name()
	}
	return out
}

// procStatReadable reports whether this machine has a /proc/stat.
func procStatReadable() bool {
	_, err := os.Stat("/proc/stat")
	return err == nil
}
