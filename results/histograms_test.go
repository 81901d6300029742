package results

import (
	"sync"
	"testing"
	"time"
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

// Workers record while the collector drains (run with -race): every value
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
