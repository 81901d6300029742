package results_test

import (
	"context"
	"os"
	"testing"

	"github.com/lockbench/lockbench/results"
	"github.com/lockbench/lockbench/results/resultstest"
)

// LoadRunsSparse reads what LoadRuns reads, as Sparse histograms: the
// same intervals with the same figures, the same totals, and nothing in
// Hists or Total. The directory holds runs with intervals, runs without
// (one whole-run histogram, which is no time series) and fault runs.
func TestLoadRunsSparse(t *testing.T) {
	dir := t.TempDir()
	fixtures := append(resultstest.BaseFixtures(3), resultstest.BaseFixtures(0)...)
	fixtures = append(fixtures, resultstest.VerdictFixtures(true)...)
	if err := results.WriteData(dir, resultstest.MakeRuns(fixtures), resultstest.TestMeta()); err != nil {
		t.Fatal(err)
	}
	fsys := os.DirFS(dir)
	_, ss, err := results.ReadDirDataFS(fsys)
	if err != nil {
		t.Fatal(err)
	}
	// every phase but Critical, whose intervals are kept for fault runs
	// alone
	want := func(s *results.Summary, p results.Phase) (bool, bool) {
		return p != results.Critical || s.HasFault(), p != results.Acquire || s.HasFault()
	}
	l := results.LayoutOfFS(fsys)
	hdr, err := results.LoadRuns(context.Background(), fsys, l, ss, want)
	if err != nil {
		t.Fatal(err)
	}
	sparse, err := results.LoadRunsSparse(context.Background(), fsys, l, ss, want)
	if err != nil {
		t.Fatal(err)
	}
	qs := []float64{0, 1, 50, 90, 99, 99.9, 100}
	same := func(what string, got, want results.Latencies) {
		t.Helper()
		if (got == nil) != (want == nil) {
			t.Errorf("%s: %v; want %v", what, got, want)
			return
		}
		if got == nil {
			return
		}
		if got.TotalCount() != want.TotalCount() || got.Max() != want.Max() {
			t.Errorf("%s: count %d, max %d; want %d, %d", what, got.TotalCount(), got.Max(), want.TotalCount(), want.Max())
		}
		for _, q := range qs {
			if g, w := got.ValueAtQuantile(q), want.ValueAtQuantile(q); g != w {
				t.Errorf("%s: p%v %d; want %d", what, q, g, w)
			}
		}
	}
	intervals := 0
	n := len(resultstest.BaseFixtures(0))
	for i := range hdr {
		h, s := &hdr[i], &sparse[i]
		id := h.Summary.ID()
		if len(s.Intervals) != len(h.Intervals) {
			t.Fatalf("%s: %d intervals; want %d", id, len(s.Intervals), len(h.Intervals))
		}
		if i >= n && i < 2*n && len(s.Intervals) != 0 {
			t.Errorf("%s: %d intervals; want none, it was written without", id, len(s.Intervals))
		}
		for p := results.Phase(0); p < results.NumPhases; p++ {
			same(id+" total "+p.String(), s.Latencies(p), h.Latencies(p))
			if s.Total[p] != nil {
				t.Errorf("%s: Total[%s] read; want it in SparseTotal alone", id, p)
			}
			for j := range h.Intervals {
				hi, si := &h.Intervals[j], &s.Intervals[j]
				if hi.StartNs != si.StartNs || hi.EndNs != si.EndNs {
					t.Errorf("%s interval %d: %d..%d; want %d..%d", id, j, si.StartNs, si.EndNs, hi.StartNs, hi.EndNs)
				}
				same(id+" interval "+p.String(), si.Latencies(p), hi.Latencies(p))
				if si.Hists[p] != nil {
					t.Errorf("%s interval %d: Hists[%s] read; want it in Sparse alone", id, j, p)
				}
				if si.Latencies(p) != nil {
					intervals++
				}
			}
		}
	}
	if intervals == 0 {
		t.Error("no interval compared")
	}
}
