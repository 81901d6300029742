package results

import (
	"sync"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// Latencies is what the charts ask of a histogram of latencies, in
// nanoseconds: *hdrhistogram.Histogram and *Sparse answer it alike.
type Latencies interface {
	TotalCount() int64
	Max() int64
	ValueAtQuantile(q float64) int64
}

var (
	_ Latencies = (*hdrhistogram.Histogram)(nil)
	_ Latencies = (*Sparse)(nil)
)

// SparseSet is one Sparse per phase.
type SparseSet [NumPhases]*Sparse

// Sparse is a histogram held as its non-empty buckets alone, each with the
// bucket's highest (and, for the first, lowest) equivalent value as the
// HdrHistogram gives them. It answers TotalCount, Max and ValueAtQuantile
// with the very numbers of the HdrHistogram it was made from, and merges
// exactly (Merge). It records nothing: LoadRunsSparse reads a run directory
// into it for drawing.
type Sparse struct {
	// lo and sigFigs are the geometry of the histogram it was made from:
	// bucket boundaries depend on them alone (not on its highest
	// trackable value), so two Sparse with the same lo and sigFigs have
	// the same buckets.
	lo      int64
	sigFigs int64
	// bars are the non-empty buckets in ascending order.
	bars  []sparseBar
	total int64
	// first is the lowest equivalent value of the first non-empty bucket
	// (ValueAtQuantile(0)).
	first int64
}

// sparseBar is one non-empty bucket: its highest equivalent value (what
// ValueAtQuantile returns for a quantile that falls in it, and Max for the
// last) and its count.
type sparseBar struct {
	top, count int64
}

// emptyMax is Max of an empty histogram of NewHistogram's geometry, which
// HdrHistogram makes the top of its first bucket rather than 0.
var emptyMax = emptyHistogram(MinLatencyNs, SigFigs).Max()

// emptyHistogram is a small empty histogram of the geometry lo, sigFigs:
// what an empty one answers depends on the geometry alone.
func emptyHistogram(lo, sigFigs int64) *hdrhistogram.Histogram {
	return hdrhistogram.New(lo, 2*lo, int(sigFigs))
}

// standardBuckets are the buckets of NewHistogram's counts, index by
// index, with their bounds as hdrhistogram-go computes them: the
// Distribution of a histogram with one count in every bucket, which walks
// the counts in their order.
var standardBuckets = sync.OnceValue(func() []hdrhistogram.Bar {
	snap := NewHistogram().Export()
	for i := range snap.Counts {
		snap.Counts[i] = 1
	}
	b := hdrhistogram.Import(snap).Distribution()
	if len(b) != len(snap.Counts) {
		return nil // not one bar an index: SparseOf walks each histogram
	}
	return b
})

// NewSparse returns an empty Sparse of NewHistogram's geometry, to Merge
// into.
func NewSparse() *Sparse {
	return &Sparse{lo: MinLatencyNs, sigFigs: SigFigs}
}

// SparseOf returns h's non-empty buckets as a Sparse: the same TotalCount,
// Max and ValueAtQuantile as h's. For NewHistogram's geometry it reads h's
// counts against standardBuckets (a quarter of the time of walking h's
// Distribution, which computes every bucket's bounds and keeps them all).
func SparseOf(h *hdrhistogram.Histogram) *Sparse {
	s := &Sparse{lo: h.LowestTrackableValue(), sigFigs: h.SignificantFigures(), total: h.TotalCount()}
	if b := standardBuckets(); s.lo == MinLatencyNs && s.sigFigs == SigFigs {
		counts := h.Export().Counts
		if len(counts) <= len(b) {
			for i, c := range counts {
				if c == 0 {
					continue
				}
				if len(s.bars) == 0 {
					s.first = b[i].From
				}
				s.bars = append(s.bars, sparseBar{top: b[i].To, count: c})
			}
			s.bars = s.bars[:len(s.bars):len(s.bars)]
			return s
		}
	}
	// Distribution walks the buckets up to the last non-empty one, the
	// way ValueAtQuantile and Max do, and gives each bucket's bounds as
	// they compute them.
	for _, b := range h.Distribution() {
		if b.Count == 0 {
			continue
		}
		if len(s.bars) == 0 {
			s.first = b.From
		}
		s.bars = append(s.bars, sparseBar{top: b.To, count: b.Count})
	}
	s.bars = s.bars[:len(s.bars):len(s.bars)]
	return s
}

// TotalCount returns the number of values recorded.
func (s *Sparse) TotalCount() int64 { return s.total }

// Max returns the highest equivalent value of the last non-empty bucket,
// as HdrHistogram's Max does (for no values, Max of an empty histogram).
func (s *Sparse) Max() int64 {
	if len(s.bars) == 0 {
		if s.lo == MinLatencyNs && s.sigFigs == SigFigs {
			return emptyMax
		}
		return emptyHistogram(s.lo, s.sigFigs).Max()
	}
	// HdrHistogram's Max is highestEquivalentValue of the bucket's
	// highest equivalent value, which is that value again.
	return s.bars[len(s.bars)-1].top
}

// ValueAtQuantile returns the value below which q percent of the recorded
// values fall, as HdrHistogram's ValueAtQuantile does: the highest
// equivalent value of the bucket where the count reaches the rank of q
// (the lowest equivalent value for q = 0), 0 when nothing was recorded.
func (s *Sparse) ValueAtQuantile(q float64) int64 {
	if s.total == 0 {
		return 0
	}
	if q > 100 {
		q = 100
	} else if q < 0 {
		q = 0
	}
	rank := percentileRank(q, s.total)
	var n int64
	for _, b := range s.bars {
		n += b.count
		if n >= rank {
			if q == 0 {
				return s.first
			}
			return b.top
		}
	}
	return s.bars[len(s.bars)-1].top // unreachable: the counts sum to total
}

// percentileRank is hdrhistogram-go's: the rank in [1, total] of the
// value at percentile q of total values.
func percentileRank(q float64, total int64) int64 {
	rank := q/100*float64(total) + 0.5
	if !(rank >= 1) { // NaN too
		return 1
	}
	if rank >= float64(total) {
		return total
	}
	return int64(rank)
}

// Merge adds the counts of o to s, as HdrHistogram's Merge adds one
// histogram to another of the same geometry. A Sparse of another geometry
// (lowest trackable value or significant figures) has other buckets: its
// counts are left out and returned as dropped.
func (s *Sparse) Merge(o *Sparse) (dropped int64) {
	if o.lo != s.lo || o.sigFigs != s.sigFigs {
		return o.total
	}
	if o.total == 0 {
		return 0
	}
	if s.total == 0 || o.first < s.first {
		s.first = o.first
	}
	out := make([]sparseBar, 0, len(s.bars)+len(o.bars))
	a, b := s.bars, o.bars
	for len(a) > 0 && len(b) > 0 {
		switch {
		case a[0].top < b[0].top:
			out, a = append(out, a[0]), a[1:]
		case b[0].top < a[0].top:
			out, b = append(out, b[0]), b[1:]
		default:
			out = append(out, sparseBar{top: a[0].top, count: a[0].count + b[0].count})
			a, b = a[1:], b[1:]
		}
	}
	out = append(append(out, a...), b...)
	s.bars = out[:len(out):len(out)]
	s.total += o.total
	return 0
}
