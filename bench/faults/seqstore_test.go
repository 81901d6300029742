package faults_test

import (
	"testing"

	"github.com/lockbench/lockbench/loadgen"
)

// seqObserver, when set, is handed to every run of run() as its
// Options.Sequenced.
var seqObserver func(loadgen.SeqStats)

// runsSequenced sets the sequenced store on for the test (its opt-in
// variable) and returns what the test's runs report of it; the test fails
// unless exactly one run used it and its trap caught a waiting Enter.
func runsSequenced(t *testing.T) func() {
	t.Setenv("LOCKBENCH_SEQ_STORE", "1")
	var got []loadgen.SeqStats
	seqObserver = func(s loadgen.SeqStats) { got = append(got, s) }
	return func() {
		seqObserver = nil
		if len(got) != 1 {
			t.Fatalf("%d runs used the sequenced store; want 1", len(got))
		}
		s := got[0]
		t.Logf("sequenced store: %+v", s)
		if s.Waited == 0 || s.Gaps != 0 || s.Errors != 0 || s.Applied == 0 {
			t.Errorf("sequenced store %+v; want events applied, waiting Enters while the trap was armed, no gaps, no errors", s)
		}
	}
}

// The pause fault works through the sequenced store: while its trap is
// armed the instance processes' Enters wait for their answers, so the
// trap stops a holder certainly inside its critical section. setnx's
// lease lapses under the paused holder and the payment is processed
// twice; the fencing token keeps the store safe.
func TestPauseSequenced(t *testing.T) {
	ctx := deadline(t)
	t.Run("setnx", func(t *testing.T) {
		done := runsSequenced(t)
		r := run(ctx, t, "setnx", "pause", small(pausePayments, false))
		done()
		struck(t, r)
		if s := r.Summary; s.Overlaps == 0 || s.Duplicates == 0 || !s.Unsafe || s.Params.InstanceMode != "process" {
			t.Errorf("overlaps %d, duplicates %d, unsafe %v, mode %s; want overlaps > 0, duplicates > 0, unsafe, process", s.Overlaps, s.Duplicates, s.Unsafe, s.Params.InstanceMode)
		}
	})
	t.Run("fencing", func(t *testing.T) {
		done := runsSequenced(t)
		r := run(ctx, t, "fencing", "pause", small(pausePayments, true))
		done()
		struck(t, r)
		if s := r.Summary; s.StaleRejected == 0 || s.Duplicates != 0 || s.Unsafe {
			t.Errorf("stale rejected %d, duplicates %d, unsafe %v; want stale rejected > 0, no duplicates, safe", s.StaleRejected, s.Duplicates, s.Unsafe)
		}
	})
}
