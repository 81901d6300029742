package results

import (
	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// Outcome is what a delivery met when it asked for the lock: acquire
// latency is two distributions mixed (the deliveries that found the lock
// free and those that waited for a holder), so it is recorded apart by
// outcome as well (Summary.LatencyByOutcome).
type Outcome int

// The outcomes, in LatencyByOutcome's order.
const (
	// FirstTry: the lock was free at the first attempt.
	FirstTry Outcome = iota
	// Waited: the acquire retried, or a blocking strategy waited for a
	// predecessor.
	Waited
	// GaveUp: the acquire gave up (not_acquired).
	GaveUp
	NumOutcomes
)

// OutcomeNames are the JSON names of the outcomes, indexed by Outcome.
var OutcomeNames = [NumOutcomes]string{OutcomeFirstTry, OutcomeWaited, OutcomeGaveUp}

// OutcomeSet is one acquire-latency histogram per outcome.
type OutcomeSet [NumOutcomes]*hdrhistogram.Histogram

// NewOutcomeSet returns empty histograms for every outcome.
func NewOutcomeSet() OutcomeSet {
	var s OutcomeSet
	for i := range s {
		s[i] = NewHistogram()
	}
	return s
}

// Merge adds every outcome of o into s.
func (s OutcomeSet) Merge(o OutcomeSet) {
	for i := range s {
		if o[i] != nil {
			s[i].Merge(o[i])
		}
	}
}

// Latencies summarises the outcomes that happened, by name.
func (s OutcomeSet) Latencies() map[string]Latency {
	m := map[string]Latency{}
	for o, h := range s {
		if h != nil && h.TotalCount() > 0 {
			m[OutcomeNames[o]] = LatencyOf(h)
		}
	}
	return m
}
