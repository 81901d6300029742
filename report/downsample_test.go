package report

import (
	"math"
	"math/rand"
	"testing"

	"github.com/lockbench/lockbench/results"
)

// downsampleIntervals merges neighbouring intervals exactly: each merged
// interval has the count, maximum and p99 of the HdrHistogram merge of its
// parts, whether they hold HdrHistograms (a run in memory) or Sparse ones
// (read back by Render), empty and missing ones included.
func TestDownsampleIntervals(t *testing.T) {
	r := rand.New(rand.NewSource(3))
	const points, n = 40, 3*40 + 7 // a run of 127 intervals drawn as at most 40
	hdr := make([]results.Interval, n)
	sparse := make([]results.Interval, n)
	for i := range hdr {
		iv := results.Interval{StartNs: int64(i) * 1e8, EndNs: int64(i+1) * 1e8}
		hdr[i], sparse[i] = iv, iv
		if i%17 == 5 {
			continue // no histogram
		}
		h := results.NewHistogram()
		for range r.Intn(300) {
			_ = h.RecordValue(int64(2e6 * math.Exp(1.2*r.NormFloat64())))
		}
		hdr[i].Hists[results.Total] = h
		sparse[i].Sparse[results.Total] = results.SparseOf(h)
	}
	per := (n + points - 1) / points
	for _, in := range []struct {
		name string
		ivs  []results.Interval
	}{{"histograms", hdr}, {"sparse", sparse}} {
		got := downsampleIntervals(in.ivs, points)
		if want := (n + per - 1) / per; len(got) != want || want > points {
			t.Fatalf("%s: %d intervals; want %d, at most %d", in.name, len(got), want, points)
		}
		for k, m := range got {
			lo, hi := k*per, min((k+1)*per, n)
			want := results.NewHistogram()
			for _, iv := range hdr[lo:hi] {
				if h := iv.Hists[results.Total]; h != nil {
					want.Merge(h)
				}
			}
			h := m.Latencies(results.Total)
			if m.StartNs != hdr[lo].StartNs || m.EndNs != hdr[hi-1].EndNs {
				t.Errorf("%s %d: %d..%d; want %d..%d", in.name, k, m.StartNs, m.EndNs, hdr[lo].StartNs, hdr[hi-1].EndNs)
			}
			if h.TotalCount() != want.TotalCount() || h.Max() != want.Max() || h.ValueAtQuantile(99) != want.ValueAtQuantile(99) {
				t.Errorf("%s %d: count %d, max %d, p99 %d; want %d, %d, %d", in.name, k,
					h.TotalCount(), h.Max(), h.ValueAtQuantile(99), want.TotalCount(), want.Max(), want.ValueAtQuantile(99))
			}
		}
	}
}
