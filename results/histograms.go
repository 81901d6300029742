package results

import (
	"sync"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// Histogram bounds: 1µs..10min in nanoseconds, 3 significant figures. The
// 1µs floor keeps a histogram near 150 KB; nothing a lock does over a network
// needs finer resolution.
const (
	// MinLatencyNs is the lowest value tracked with full precision: 1µs.
	MinLatencyNs = 1000
	// MaxLatencyNs is the highest recordable latency: 10 minutes. Larger values
	// are clamped to it (and still counted).
	MaxLatencyNs = int64(10 * time.Minute)
	// SigFigs is the HdrHistogram precision: 3 significant figures.
	SigFigs = 3
)

// NewHistogram returns an empty latency histogram with lockbench's bounds.
func NewHistogram() *hdrhistogram.Histogram {
	return hdrhistogram.New(MinLatencyNs, MaxLatencyNs, SigFigs)
}

// PhaseSet is one histogram per phase.
type PhaseSet [NumPhases]*hdrhistogram.Histogram

// NewPhaseSet returns empty histograms for every phase.
func NewPhaseSet() PhaseSet {
	var s PhaseSet
	for i := range s {
		s[i] = NewHistogram()
	}
	return s
}

// Merge adds every phase of o into s.
func (s PhaseSet) Merge(o PhaseSet) {
	for i := range s {
		if o[i] != nil {
			s[i].Merge(o[i])
		}
	}
}

// Recorder is one worker's latency recorder. hdrhistogram-go is not
// goroutine-safe, and a histogram per worker would cost a 150 KB reset per
// phase per worker every interval; so a worker appends raw values to its own
// buffers, and the collector drains them into the interval's histograms once
// per interval. The recorder's mutex is taken by its one worker per cycle and
// by the collector once per interval: never contended on the hot path (unlike
// a global lock around shared histograms).
type Recorder struct {
	mu  sync.Mutex
	buf [NumPhases][]int64
	// spare is the drained buffers, kept for reuse; only Drain touches it.
	spare [NumPhases][]int64
	// out holds acquire latencies by outcome, drained with buf.
	out, outSpare [NumOutcomes][]int64
}

// NewRecorder returns an empty recorder.
func NewRecorder() *Recorder { return &Recorder{} }

// Record adds one latency for phase p, clamped to the histogram's range
// (values under MinLatencyNs are kept, at coarser precision).
func (r *Recorder) Record(p Phase, d time.Duration) {
	r.mu.Lock()
	r.buf[p] = append(r.buf[p], clamp(d))
	r.mu.Unlock()
}

// RecordCycle records one whole lock cycle's phases under one lock.
func (r *Recorder) RecordCycle(acquire, critical, release, total time.Duration) {
	r.mu.Lock()
	for p, d := range [NumPhases]time.Duration{acquire, critical, release, total} {
		r.buf[p] = append(r.buf[p], clamp(d))
	}
	r.mu.Unlock()
}

// RecordOutcome adds one acquire latency for outcome o.
func (r *Recorder) RecordOutcome(o Outcome, d time.Duration) {
	r.mu.Lock()
	r.out[o] = append(r.out[o], clamp(d))
	r.mu.Unlock()
}

func clamp(d time.Duration) int64 {
	v := int64(d)
	if v < 0 {
		return 0
	}
	return min(v, MaxLatencyNs)
}

// Drain records everything recorded since the last Drain into into, and the
// acquire latencies by outcome into outcomes (which may be all nil: dropped).
// Only one goroutine (the collector) may call Drain.
func (r *Recorder) Drain(into PhaseSet, outcomes OutcomeSet) {
	r.mu.Lock()
	full, fullOut := r.buf, r.out
	for p := range r.spare {
		r.buf[p] = r.spare[p][:0]
	}
	for o := range r.outSpare {
		r.out[o] = r.outSpare[o][:0]
	}
	r.mu.Unlock()
	for p, vs := range full {
		for _, v := range vs {
			_ = into[p].RecordValue(v)
		}
	}
	for o, vs := range fullOut {
		if outcomes[o] == nil {
			continue
		}
		for _, v := range vs {
			_ = outcomes[o].RecordValue(v)
		}
	}
	r.spare, r.outSpare = full, fullOut
}

// Reset empties every phase.
func (s PhaseSet) Reset() {
	for _, h := range s {
		h.Reset()
	}
}

// LatencyOf summarises h.
func LatencyOf(h *hdrhistogram.Histogram) Latency {
	if h == nil || h.TotalCount() == 0 {
		return Latency{}
	}
	return Latency{
		P50:   h.ValueAtQuantile(50),
		P90:   h.ValueAtQuantile(90),
		P99:   h.ValueAtQuantile(99),
		P999:  h.ValueAtQuantile(99.9),
		Max:   h.Max(),
		Mean:  h.Mean(),
		Count: h.TotalCount(),
	}
}

// Latencies summarises every phase of s by phase name.
func (s PhaseSet) Latencies() map[string]Latency {
	m := make(map[string]Latency, NumPhases)
	for p, h := range s {
		m[PhaseNames[p]] = LatencyOf(h)
	}
	return m
}
