package results

import (
	"math/bits"
	"slices"
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
// buffer, and the collector drains them into the interval's histograms once
// per interval. The recorder's mutex is taken by its one worker once per
// cycle and by the collector twice per interval: never contended on the hot
// path (unlike a global lock around shared histograms). The buffer's layout
// is in the package doc ("Recording latencies").
type Recorder struct {
	mu   sync.Mutex
	cur  []uint64   // the chunk being filled
	full [][]uint64 // chunks filled since the last Drain
	// spare is the drained list of full, for reuse.
	spare [][]uint64
}

// RecorderHead is how many of a Recorder's first bytes a cycle's recording
// touches: its mutex and the chunk being filled.
const RecorderHead = 32

// recorderChunk is the number of values in one chunk of a Recorder's
// buffer: 1024 (8 KB).
const recorderChunk = 1024

// chunks holds drained chunks for any recorder.
var chunks = sync.Pool{New: func() any { return new([recorderChunk]uint64) }}

// A buffered value is its slot (a phase, or NumPhases + an outcome) in the
// top byte and the latency in the rest: latencies are clamped to
// MaxLatencyNs, well below 2⁵⁶.
const (
	slotShift = 56
	valueMask = 1<<slotShift - 1
)

func tag(slot int, d time.Duration) uint64 { return uint64(slot)<<slotShift | uint64(clamp(d)) }

// NewRecorder returns an empty recorder.
func NewRecorder() *Recorder { return &Recorder{} }

// room makes space for n values in r.cur; r.mu is held.
func (r *Recorder) room(n int) {
	if cap(r.cur)-len(r.cur) >= n {
		return
	}
	if len(r.cur) > 0 {
		r.full = append(r.full, r.cur)
	}
	r.cur = chunks.Get().(*[recorderChunk]uint64)[:0]
}

// Record adds one latency for phase p, clamped to the histogram's range
// (values under MinLatencyNs are kept, at coarser precision).
func (r *Recorder) Record(p Phase, d time.Duration) {
	r.mu.Lock()
	r.room(1)
	r.cur = append(r.cur, tag(int(p), d))
	r.mu.Unlock()
}

// RecordCycle records one whole lock cycle's phases under one lock.
func (r *Recorder) RecordCycle(acquire, critical, release, total time.Duration) {
	r.mu.Lock()
	r.room(int(NumPhases))
	r.cur = append(r.cur, tag(int(Acquire), acquire), tag(int(Critical), critical), tag(int(Release), release), tag(int(Total), total))
	r.mu.Unlock()
}

// RecordOutcome adds one acquire latency for outcome o.
func (r *Recorder) RecordOutcome(o Outcome, d time.Duration) {
	r.mu.Lock()
	r.room(1)
	r.cur = append(r.cur, tag(int(NumPhases)+int(o), d))
	r.mu.Unlock()
}

// RecordCycleOutcome records one whole lock cycle's phases and its
// acquire's outcome under one lock: RecordCycle, and RecordOutcome of the
// acquire latency.
func (r *Recorder) RecordCycleOutcome(o Outcome, acquire, critical, release, total time.Duration) {
	r.mu.Lock()
	r.room(int(NumPhases) + 1)
	r.cur = append(r.cur, tag(int(Acquire), acquire), tag(int(Critical), critical), tag(int(Release), release), tag(int(Total), total),
		tag(int(NumPhases)+int(o), acquire))
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
	var b Batch
	b.Take(r)
	b.Record(into, outcomes)
}

// Take moves everything r recorded since the last Take (or Drain) into b,
// to be recorded with b.Record. Only one goroutine (the collector) may take
// from r.
func (b *Batch) Take(r *Recorder) {
	r.mu.Lock()
	full := r.full
	if len(r.cur) > 0 {
		full = append(full, r.cur)
		r.cur = nil
	}
	r.full = r.spare[:0]
	r.mu.Unlock()
	for _, c := range full {
		b.vals = append(b.vals, c...)
		chunks.Put((*[recorderChunk]uint64)(c[:recorderChunk]))
	}
	clear(full)
	r.mu.Lock()
	r.spare = full[:0]
	r.mu.Unlock()
}

// Batch holds values taken from recorders until they are recorded, and the
// room Record orders them in; keep one to take and record batch after
// batch without allocating.
type Batch struct {
	vals, tmp []uint64
	groups    [numGroups + 1]int32
}

// Len is the number of values b holds.
func (b *Batch) Len() int { return len(b.vals) }

// Values are grouped by slot and octave (bits.Len64 of the latency, 0 to
// 40 under MaxLatencyNs) before they are recorded: 7 slots of 64 octaves,
// 448 groups.
const (
	octaveBits = 6
	numSlots   = int(NumPhases) + int(NumOutcomes)
	numGroups  = numSlots << octaveBits
)

func group(v uint64) int {
	return int(v>>slotShift)<<octaveBits | bits.Len64(v&valueMask)
}

// Record records b's values into into, and the acquire latencies by outcome
// into outcomes (which may be all nil: dropped), and empties b. It groups
// them by slot and octave first (a counting sort): a histogram's 22,528
// counts (176 KB) are evicted between drains, so in arrival order nearly
// every value missed the cache, while one octave's 1,024 counts (8 KB) stay
// in the first-level cache as its values go in (the package doc has the
// measurements).
func (b *Batch) Record(into PhaseSet, outcomes OutcomeSet) {
	vals := b.vals
	if len(vals) == 0 {
		return
	}
	g := &b.groups
	clear(g[:])
	for _, v := range vals {
		g[group(v)+1]++
	}
	for i := 1; i < len(g); i++ {
		g[i] += g[i-1]
	}
	tmp := slices.Grow(b.tmp[:0], len(vals))[:len(vals)]
	for _, v := range vals {
		k := group(v)
		tmp[g[k]] = v
		g[k]++
	}
	for _, v := range tmp {
		slot, ns := int(v>>slotShift), int64(v&valueMask)
		if slot < int(NumPhases) {
			_ = into[slot].RecordValue(ns)
		} else if h := outcomes[slot-int(NumPhases)]; h != nil {
			_ = h.RecordValue(ns)
		}
	}
	if cap(vals) > keepBatch {
		// A collector that fell behind took a spike: the room goes back
		// to the garbage collector rather than staying as the
		// high-water mark of a long run's memory.
		b.vals, b.tmp = nil, nil
		return
	}
	b.vals, b.tmp = vals[:0], tmp[:0]
}

// keepBatch is the most values a Batch keeps room for between batches:
// 65,536 (512 KB, and as much again to order them in), eight times what
// a collector keeping up takes at once (loadgen's maxBatch is 8,192).
const keepBatch = 1 << 16

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
