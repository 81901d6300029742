package results_test

import (
	"context"
	"testing"

	"github.com/lockbench/lockbench/results"
)

// TestLoadReference reads the committed reference run, whichever layout
// it was written in: its data files, and the total latencies of every
// tenth run (all of them, over a thousand runs, take minutes under -race)
// as LoadDir reads them.
func TestLoadReference(t *testing.T) {
	meta, ss, err := results.ReadDirData("reference")
	if err != nil {
		t.Fatal(err)
	}
	if len(ss) == 0 || meta.Title == "" {
		t.Fatalf("reference: %d runs, title %q; want runs and a title", len(ss), meta.Title)
	}
	n := 0
	sampled := map[*results.Summary]bool{}
	runs, err := results.LoadRuns(context.Background(), "reference", results.LayoutOf("reference"), ss, func(s *results.Summary, p results.Phase) (bool, bool) {
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
