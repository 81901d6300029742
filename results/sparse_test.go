package results

import (
	"math"
	"math/rand"
	"testing"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// sameLatencies reports how a differs from b, the HdrHistogram, on every
// figure a chart asks: the count, the maximum, and the values at fixed
// and random quantiles (those at the edges and beyond them included).
func sameLatencies(t *testing.T, what string, a Latencies, b *hdrhistogram.Histogram, r *rand.Rand) {
	t.Helper()
	if got, want := a.TotalCount(), b.TotalCount(); got != want {
		t.Errorf("%s: count %d; want %d", what, got, want)
	}
	if got, want := a.Max(), b.Max(); got != want {
		t.Errorf("%s: max %d; want %d", what, got, want)
	}
	qs := []float64{math.NaN(), -1, 0, 1e-9, 0.1, 1, 10, 50, 90, 99, 99.9, 99.99, 99.9999, 100, 101}
	for range 50 {
		qs = append(qs, 100*r.Float64())
	}
	// the spectrum's quantiles, 1/(1−p) from 1 to 10^6 at 40 a decade
	for i := 0; i <= 240; i++ {
		qs = append(qs, 100*(1-1/math.Pow(10, float64(i)/40)))
	}
	for _, q := range qs {
		if got, want := a.ValueAtQuantile(q), b.ValueAtQuantile(q); got != want {
			t.Errorf("%s: p%v = %d; want %d", what, q, got, want)
		}
	}
}

// randomLatencies records n values of one of several shapes into a
// NewHistogram.
func randomLatencies(r *rand.Rand, n int) *hdrhistogram.Histogram {
	h := NewHistogram()
	shape := r.Intn(4)
	for range n {
		var v int64
		switch shape {
		case 0: // uniform over a wide range
			v = 1 + r.Int63n(20_000_000_000)
		case 1: // log-normal around a millisecond, a latency's shape
			v = int64(1e6 * math.Exp(r.NormFloat64()*1.5))
		case 2: // a few values, repeated
			v = []int64{999, 1000, 1023, 1024, 2047, 2048, 4095, 1 << 20, MaxLatencyNs}[r.Intn(9)]
		default: // below the lowest value, around bucket edges and at the top
			v = int64(1) << uint(r.Intn(40))
			v += r.Int63n(3) - 1
		}
		_ = h.RecordValue(max(0, min(v, MaxLatencyNs)))
	}
	return h
}

// A Sparse answers as the HdrHistogram it was made from does, fitted or
// not, and as one made by merging does: the numbers of the timelines and
// spectra drawn from a run directory read back are those of the
// histograms themselves.
func TestSparseAnswersAsHistogram(t *testing.T) {
	r := rand.New(rand.NewSource(7))
	for trial := range 100 {
		h := randomLatencies(r, []int{0, 1, 2, 30, 1000, 20_000}[trial%6])
		sameLatencies(t, "sparse", SparseOf(h), h, r)
		sameLatencies(t, "sparse of fitted", SparseOf(fitted(h)), h, r)
	}
	// another geometry, whose buckets SparseOf walks instead of reading
	// them from standardBuckets
	for _, sigFigs := range []int{1, 2, 4} {
		h := hdrhistogram.New(1, MaxLatencyNs, sigFigs)
		for range 3000 {
			_ = h.RecordValue(int64(1e5 * math.Exp(2*r.NormFloat64())))
		}
		sameLatencies(t, "another geometry", SparseOf(h), h, r)
		sameLatencies(t, "empty of another geometry", SparseOf(hdrhistogram.New(1, 1000, sigFigs)), hdrhistogram.New(1, 1000, sigFigs), r)
	}
}

// Merging Sparse gives what merging the histograms into a NewHistogram
// gives (downsampled timelines), whatever the parts' shapes and highest
// values (fitted), empty parts included; a Sparse of another geometry is
// dropped.
func TestSparseMerge(t *testing.T) {
	r := rand.New(rand.NewSource(8))
	for trial := range 50 {
		want := NewHistogram()
		got := NewSparse()
		for range 1 + r.Intn(8) {
			part := fitted(randomLatencies(r, []int{0, 1, 50, 3000}[r.Intn(4)]))
			want.Merge(part)
			if d := got.Merge(SparseOf(part)); d != 0 {
				t.Fatalf("trial %d: %d dropped; want 0", trial, d)
			}
		}
		sameLatencies(t, "merged", got, want, r)
	}
	sameLatencies(t, "empty", NewSparse(), NewHistogram(), r)

	other := hdrhistogram.New(1, MaxLatencyNs, SigFigs)
	_ = other.RecordValue(5)
	s := NewSparse()
	if d := s.Merge(SparseOf(other)); d != 1 || s.TotalCount() != 0 {
		t.Errorf("merging another geometry: %d dropped, count %d; want 1 dropped, count 0", d, s.TotalCount())
	}
}

// A Sparse of an interval takes a fraction of the fitted histogram's
// memory.
func TestSparseSmall(t *testing.T) {
	h := NewHistogram()
	r := rand.New(rand.NewSource(9))
	for range 200 {
		_ = h.RecordValue(int64(5e6 * math.Exp(r.NormFloat64())))
	}
	s := SparseOf(h)
	if got, fit := 16*cap(s.bars), int(fitted(h).ByteSize()); got > fit/10 {
		t.Errorf("sparse: %d bytes of buckets; want under a tenth of the fitted %d", got, fit)
	}
}
