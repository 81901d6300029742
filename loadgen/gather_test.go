package loadgen

import (
	"testing"
	"time"

	"github.com/lockbench/lockbench/results"
)

// The collector's drains gather the workers' values without recording
// them until a batch is full; the interval's Swap records the rest, so
// that every value lands in the interval it was gathered in.
func TestGatherRecordsInBatches(t *testing.T) {
	in := &Instance{outcomes: results.NewOutcomeSet()}
	for range 3 {
		in.workers = append(in.workers, newWorker(in, nil))
	}
	cycle := func(w *worker) {
		w.rec.RecordCycleOutcome(results.FirstTry, 20*time.Microsecond, time.Microsecond, 15*time.Microsecond, 36*time.Microsecond)
	}
	set := results.NewPhaseSet()
	count := func() int64 { return set[results.Total].TotalCount() }

	for _, w := range in.workers {
		cycle(w)
	}
	in.Gather(set)
	if n := count(); n != 0 {
		t.Fatalf("after gathering 3 cycles, %d recorded; want none until a batch is full", n)
	}
	in.Swap(set)
	if n, o := count(), in.outcomes[results.FirstTry].TotalCount(); n != 3 || o != 3 {
		t.Fatalf("after the swap, %d cycles and %d outcomes recorded; want 3 and 3", n, o)
	}

	// A full batch is recorded by the gather that fills it.
	per := maxBatch/5 + 1 // five values a cycle
	for i := range per {
		cycle(in.workers[i%len(in.workers)])
	}
	in.Gather(set)
	if n := count(); n != 3+int64(per) {
		t.Fatalf("after gathering %d cycles (over %d values), %d recorded; want %d", per, maxBatch, n, 3+per)
	}
	in.Swap(set)
	if n := count(); n != 3+int64(per) {
		t.Fatalf("a swap with nothing gathered changed the count to %d", n)
	}
}
