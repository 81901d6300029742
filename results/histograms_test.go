package results

import (
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// What a recorder is given comes out of Drain in the histograms of its
// phase or outcome, once, whichever chunk it was buffered in.
func TestRecorderDrain(t *testing.T) {
	r := NewRecorder()
	const cycles = 3*recorderChunk + 7 // several chunks, the last part-filled
	for i := range cycles {
		d := time.Duration(i+1) * time.Microsecond
		r.RecordCycleOutcome(Waited, d, 2*d, 3*d, 10*d)
	}
	r.Record(Acquire, time.Hour) // clamped to MaxLatencyNs
	r.RecordOutcome(GaveUp, -time.Second)
	r.RecordCycle(time.Millisecond, 0, 0, time.Millisecond)

	phases, outcomes := NewPhaseSet(), NewOutcomeSet()
	r.Drain(phases, outcomes)
	for _, tc := range []struct {
		name      string
		got, want int64
	}{
		{"acquire count", phases[Acquire].TotalCount(), cycles + 2},
		{"critical count", phases[Critical].TotalCount(), cycles + 1},
		{"total count", phases[Total].TotalCount(), cycles + 1},
		{"waited count", outcomes[Waited].TotalCount(), cycles},
		{"gave-up count", outcomes[GaveUp].TotalCount(), 1},
		{"first-try count", outcomes[FirstTry].TotalCount(), 0},
		{"acquire max (clamped)", phases[Acquire].Max(), MaxLatencyNs},
		{"gave-up value (negative is 0)", outcomes[GaveUp].Min(), 0},
		{"total max", phases[Total].Max(), int64(10 * cycles * time.Microsecond)},
	} {
		// Values are kept to 3 significant figures.
		if d := tc.got - tc.want; d < 0 || d > tc.want/500 {
			t.Errorf("%s = %d; want %d", tc.name, tc.got, tc.want)
		}
	}

	// A second Drain finds nothing new; dropped outcomes (nil) are fine.
	again := NewPhaseSet()
	r.RecordCycle(time.Millisecond, 0, 0, time.Millisecond)
	r.Drain(again, OutcomeSet{})
	if got := again[Total].TotalCount(); got != 1 {
		t.Errorf("second Drain: total count %d; want 1 (only what came after the first)", got)
	}
}

// A batch taken from several recorders and recorded in its order (by phase
// and octave) leaves every histogram exactly as recording each value as it
// came does, values of every octave, equal ones and out-of-range ones
// included; and it is empty after, ready for the next.
func TestBatchRecordsAsRecorded(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	want, wantOut := NewPhaseSet(), NewOutcomeSet()
	got, gotOut := NewPhaseSet(), NewOutcomeSet()
	var b Batch
	for round := range 3 {
		recs := []*Recorder{NewRecorder(), NewRecorder(), NewRecorder()}
		for i := range 5000 {
			// Latencies from 0 to past MaxLatencyNs, log-uniform, and a run of
			// one repeated value.
			d := time.Duration(math.Exp(rng.Float64() * math.Log(float64(2*MaxLatencyNs))))
			if i%50 == 0 {
				d = 1234567
			}
			p, o := Phase(rng.IntN(int(NumPhases))), Outcome(rng.IntN(int(NumOutcomes)))
			r := recs[rng.IntN(len(recs))]
			r.Record(p, d)
			r.RecordOutcome(o, d)
			_ = want[p].RecordValue(clamp(d))
			_ = wantOut[o].RecordValue(clamp(d))
		}
		for _, r := range recs {
			b.Take(r)
		}
		if b.Len() != 2*5000 {
			t.Fatalf("round %d: batch holds %d values; want %d", round, b.Len(), 2*5000)
		}
		b.Record(got, gotOut)
		if b.Len() != 0 {
			t.Fatalf("round %d: %d values left in the batch after Record", round, b.Len())
		}
	}
	same := func(name string, g, w *hdrhistogram.Histogram) {
		if !slices.Equal(g.Export().Counts, w.Export().Counts) || g.TotalCount() != w.TotalCount() || g.Max() != w.Max() || g.Min() != w.Min() {
			t.Errorf("%s: recorded by batch differs (count %d, want %d)", name, g.TotalCount(), w.TotalCount())
		}
	}
	for p := range NumPhases {
		same(p.String(), got[p], want[p])
	}
	for o := range NumOutcomes {
		same(OutcomeNames[o], gotOut[o], wantOut[o])
	}
}

// Workers record while the collector drains (run with -race): every value
// A batch keeps its room from one batch to the next while batches are the
// size a collector keeping up takes, and gives a spike's room back once
// it is recorded (a collector that fell behind for a second at a million
// cycles a second takes tens of MB at once), so that a long run's memory
// does not stay at its worst moment's.
func TestBatchGivesBackASpike(t *testing.T) {
	take := func(b *Batch, n int) {
		r := NewRecorder()
		for i := range n {
			r.Record(Total, time.Duration(i+1)*time.Microsecond)
		}
		b.Take(r)
		b.Record(NewPhaseSet(), NewOutcomeSet())
	}
	var b Batch
	take(&b, 8192)
	if c := cap(b.vals); c < 8192 {
		t.Fatalf("after a batch of 8,192: room for %d; want it kept", c)
	}
	take(&b, 20*keepBatch)
	if c := cap(b.vals) + cap(b.tmp); c != 0 {
		t.Errorf("after a spike of %d values: room for %d kept; want none", 20*keepBatch, c)
	}
	take(&b, 8192)
	if c := cap(b.vals); c < 8192 || c > keepBatch {
		t.Errorf("after the spike, a batch of 8,192: room for %d; want 8,192..%d", c, keepBatch)
	}
}

// is drained exactly once.
func TestRecorderConcurrentDrain(t *testing.T) {
	r := NewRecorder()
	const n = 20 * recorderChunk
	total := NewPhaseSet()
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := range n {
			r.RecordCycleOutcome(FirstTry, time.Duration(i), 0, 0, time.Duration(i))
		}
	})
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	outcomes := NewOutcomeSet()
	for drained := false; !drained; {
		select {
		case <-done:
			drained = true
		default:
		}
		r.Drain(total, outcomes)
	}
	if got := total[Total].TotalCount(); got != n {
		t.Errorf("total count %d; want %d", got, n)
	}
	if got := outcomes[FirstTry].TotalCount(); got != n {
		t.Errorf("first-try count %d; want %d", got, n)
	}
}

// BenchmarkRecordCold records one drain's worth of a lock cycle's values
// (3,000: 20 ms of a local Redis's cycles, five values each, latencies
// spread over 0.3 to 3 ms) into histograms whose cache lines the server
// and the client evicted since the last drain, as they do in a real run
// (modelled by writing 64 MB between drains, untimed, which flushes the
// shared last-level cache too): in the order they
// came, and grouped by Batch.
func BenchmarkRecordCold(b *testing.B) {
	rng := rand.New(rand.NewPCG(3, 4))
	vals := make([]uint64, 3000)
	for i := range vals {
		d := time.Duration(300_000 * math.Exp(rng.Float64()*math.Log(10)))
		vals[i] = tag(i%int(NumPhases+1), d)
	}
	evict := make([]byte, 64<<20)
	phases, outcomes := NewPhaseSet(), NewOutcomeSet()
	run := func(b *testing.B, record func()) {
		for b.Loop() {
			b.StopTimer()
			for i := 0; i < len(evict); i += 64 {
				evict[i]++
			}
			b.StartTimer()
			record()
		}
	}
	b.Run("arrival-order", func(b *testing.B) {
		run(b, func() {
			for _, v := range vals {
				slot, ns := int(v>>slotShift), int64(v&valueMask)
				if slot < int(NumPhases) {
					_ = phases[slot].RecordValue(ns)
				} else {
					_ = outcomes[slot-int(NumPhases)].RecordValue(ns)
				}
			}
		})
	})
	b.Run("batch", func(b *testing.B) {
		var bt Batch
		run(b, func() {
			bt.vals = append(bt.vals[:0], vals...)
			bt.Record(phases, outcomes)
		})
	})
}

// A cycle's recording touches the mutex and the chunk being filled, the
// first RecorderHead bytes: a worker keeps them on one line with what else
// its cycle touches.
func TestRecorderHead(t *testing.T) {
	var r Recorder
	for name, end := range map[string]uintptr{
		"mu":  unsafe.Offsetof(r.mu) + unsafe.Sizeof(r.mu),
		"cur": unsafe.Offsetof(r.cur) + unsafe.Sizeof(r.cur),
	} {
		if end > RecorderHead {
			t.Errorf("Recorder.%s ends at byte %d; want within RecorderHead (%d)", name, end, RecorderHead)
		}
	}
}
