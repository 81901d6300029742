package results

import (
	"math/rand"
	"testing"
)

// A fitted histogram (an interval read back) gives every figure of the
// original, in less memory.
func TestFittedKeepsFigures(t *testing.T) {
	h := NewHistogram()
	r := rand.New(rand.NewSource(1))
	for range 5000 {
		_ = h.RecordValue(1000 + r.Int63n(20_000_000))
	}
	h.SetTag("t")
	f := fitted(h)
	if f.ByteSize() >= h.ByteSize()/2 {
		t.Errorf("fitted: %d bytes; want under half of %d", f.ByteSize(), h.ByteSize())
	}
	for _, q := range []float64{0, 1, 50, 90, 99, 99.9, 100} {
		if a, b := h.ValueAtQuantile(q), f.ValueAtQuantile(q); a != b {
			t.Errorf("p%v: %d fitted, %d before", q, b, a)
		}
	}
	if h.Mean() != f.Mean() || h.Max() != f.Max() || h.Min() != f.Min() || h.TotalCount() != f.TotalCount() || f.Tag() != "t" {
		t.Errorf("fitted: mean %v max %d min %d count %d tag %q; want %v %d %d %d t", f.Mean(), f.Max(), f.Min(), f.TotalCount(), f.Tag(), h.Mean(), h.Max(), h.Min(), h.TotalCount())
	}
}
