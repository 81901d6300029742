package results

import hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

// Interval is what was recorded during one interval of a run (1 s by
// default), relative to the start of the measured run.
type Interval struct {
	StartNs int64
	EndNs   int64
	Hists   PhaseSet
	// Sparse holds the histograms instead of Hists in an interval read
	// back by LoadRunsSparse.
	Sparse SparseSet
}

// Latencies returns the interval's histogram of phase p, from Hists or
// Sparse; nil when it has none.
func (iv *Interval) Latencies(p Phase) Latencies {
	return latenciesOf(iv.Hists[p], iv.Sparse[p])
}

// Run is everything measured in one strategy × scenario × fault run: the
// counters (Summary) and the HDR histograms, whole and per interval. It is
// what the encoders write and `lockbench report` reads back.
type Run struct {
	Summary Summary
	Total   PhaseSet
	// SparseTotal holds the whole-run histograms instead of Total in a
	// run read back by LoadRunsSparse.
	SparseTotal SparseSet
	Intervals   []Interval
	// Log, when set, holds the run's intervals on disk instead of
	// Intervals (a long run's: loadgen.Options.StreamIntervals); WriteData
	// writes the interval logs from it. Its owner closes it once the data
	// files are written.
	Log *HlogStream
	// OnDisk marks a run whose interval logs WriteData has already written
	// into the run directory and which keeps only its Summary (Total and
	// Intervals empty, Log nil), so that a long command's memory does not
	// grow with the runs it has finished: WriteData leaves its logs as
	// they are, and its report is drawn from the directory.
	OnDisk bool
}

// Latencies returns the run's whole-run histogram of phase p, from Total
// or SparseTotal; nil when it has none.
func (r *Run) Latencies(p Phase) Latencies {
	return latenciesOf(r.Total[p], r.SparseTotal[p])
}

// latenciesOf is h, else s, else a nil Latencies (not one holding a nil
// pointer, which would not compare equal to nil).
func latenciesOf(h *hdrhistogram.Histogram, s *Sparse) Latencies {
	switch {
	case h != nil:
		return h
	case s != nil:
		return s
	}
	return nil
}

// Event is a timestamped note of the fault's timeline.
type Event struct {
	AtNs int64  `json:"at_ns"`
	What string `json:"what"`
}

func SummariesOf(runs []Run) []Summary {
	ss := make([]Summary, len(runs))
	for i, r := range runs {
		ss[i] = r.Summary
	}
	return ss
}
