package results_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/lockbench/lockbench/results"
)

// TestLoadReference reads the committed reference run, whichever layout
// it was written in, packed or not: its data files, and the total latencies of every
// tenth run (all of them, over a thousand runs, take minutes under -race)
// as LoadDir reads them.
func TestLoadReference(t *testing.T) {
	fsys, err := results.OpenDir("reference")
	if err != nil {
		t.Fatal(err)
	}
	meta, ss, err := results.ReadDirDataFS(fsys)
	if err != nil {
		t.Fatal(err)
	}
	if len(ss) == 0 || meta.Title == "" {
		t.Fatalf("reference: %d runs, title %q; want runs and a title", len(ss), meta.Title)
	}
	n := 0
	sampled := map[*results.Summary]bool{}
	runs, err := results.LoadRuns(context.Background(), fsys, results.LayoutOfFS(fsys), ss, func(s *results.Summary, p results.Phase) (bool, bool) {
		if p == 0 {
			sampled[s] = n%10 == 0
			n++
		}
		return p == results.Total && sampled[s], false
	})
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for i := range runs {
		r := &runs[i]
		if !sampled[&r.Summary] {
			continue
		}
		checked++
		if got, want := r.Total[results.Total].TotalCount(), r.Summary.Latency["total"].Count; got != want {
			t.Errorf("%s: %d total latencies loaded; want the %d of its summary", r.Summary.ID(), got, want)
		}
	}
	if checked < len(ss)/10 {
		t.Errorf("checked %d runs of %d; want every tenth", checked, len(ss))
	}
}

// TestReferenceHlogsReadByHdrJS reads every interval log of the committed
// reference run with hdr-histogram-js (tools/hdrjs), a reader that shares
// no code with the writer, taking them out of its archive when it is
// packed: each log's total is its run's latency count in summary.json.
func TestReferenceHlogsReadByHdrJS(t *testing.T) {
	fsys, err := results.OpenDir("reference")
	if err != nil {
		t.Fatal(err)
	}
	_, ss, err := results.ReadDirDataFS(fsys)
	if err != nil {
		t.Fatal(err)
	}
	dir := "reference"
	if _, err := os.Stat(filepath.Join(dir, results.ArchiveFile)); err == nil {
		dir = filepath.Join(t.TempDir(), "reference")
		if err := os.CopyFS(dir, fsys); err != nil {
			t.Fatal(err)
		}
	}
	counts := hdrjsCounts(t, filepath.Join(dir, results.LayoutOfFS(fsys).Hlog))
	if n, want := checkHlogCounts(t, counts, ss), len(ss)*int(results.NumPhases); n != want {
		t.Errorf("checked %d interval logs; want %d", n, want)
	}
}
