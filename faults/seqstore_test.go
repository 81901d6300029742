package faults_test

import (
	"testing"

	"github.com/lockbench/lockbench/loadgen"
)

// seqTransport and seqObserver, when set, are handed to every run of
// run() as its Options.StoreTransport and Options.Reporter.
var (
	seqTransport string
	seqObserver  loadgen.Reporter
)

// runsSequenced puts the test's runs on the sequenced store and returns
// what they report of it; the test fails unless exactly one run used it,
// with no gap and no error, and (trapped) a trap caught a waiting Enter.
func runsSequenced(t *testing.T, trapped bool) func() {
	var got []loadgen.SeqStats
	seqTransport = loadgen.TransportSequenced
	seqObserver = loadgen.Events(func(e loadgen.Event) {
		if e.Kind == loadgen.EventSequenced {
			got = append(got, e.Seq)
		}
	})
	// Even if the test stops before done: the next tests run sync.
	t.Cleanup(func() { seqTransport, seqObserver = "", nil })
	return func() {
		seqTransport, seqObserver = "", nil
		if len(got) != 1 {
			t.Fatalf("%d runs used the sequenced store; want 1", len(got))
		}
		s := got[0]
		t.Logf("sequenced store: %+v", s)
		if s.Gaps != 0 || s.Errors != 0 || s.Applied == 0 {
			t.Errorf("sequenced store %+v; want events applied, no gaps, no errors", s)
		}
		if trapped && s.Waited == 0 {
			t.Errorf("sequenced store %+v; want waiting Enters while the trap was armed", s)
		}
	}
}

// The pause fault works through the sequenced store: while its trap is
// armed the instance processes' Enters wait for their answers, so the
// trap stops a holder certainly inside its critical section. setnx's
// lease lapses under the paused holder and the payment is processed
// twice; the fencing token keeps the store safe.
func TestPauseSequenced(t *testing.T) {
	t.Run("setnx", func(t *testing.T) {
		done := runsSequenced(t, true)
		r := run(t, "setnx", "pause", small(pausePayments, false))
		done()
		struck(t, r)
		if s := r.Summary; s.Overlaps == 0 || s.Duplicates == 0 || !s.Unsafe || s.Params.InstanceMode != string(loadgen.InstanceProcess) {
			t.Errorf("overlaps %d, duplicates %d, unsafe %v, mode %s; want overlaps > 0, duplicates > 0, unsafe, process", s.Overlaps, s.Duplicates, s.Unsafe, s.Params.InstanceMode)
		}
	})
	t.Run("fencing", func(t *testing.T) {
		done := runsSequenced(t, true)
		r := run(t, "fencing", "pause", small(pausePayments, true))
		done()
		struck(t, r)
		if s := r.Summary; s.StaleRejected == 0 || s.Duplicates != 0 || s.Unsafe {
			t.Errorf("stale rejected %d, duplicates %d, unsafe %v; want stale rejected > 0, no duplicates, safe", s.StaleRejected, s.Duplicates, s.Unsafe)
		}
	})
}

// Without a fault, setnx through the sequenced store is safe: its holders
// exclude one another, and the events of every process are judged in an
// order their locks allow. (No trap: every Enter is one-way.)
func TestSetnxSequencedSafe(t *testing.T) {
	done := runsSequenced(t, false)
	sc := small(2000, false)
	sc.InstanceMode, sc.Rate = "process", 0
	sc.Hold, _ = loadgen.ParseHold("0s")
	r := run(t, "setnx", "none", sc)
	done()
	if s := r.Summary; s.Unsafe || s.Overlaps != 0 || s.Processed != s.Payments || len(s.Errors) != 0 {
		t.Errorf("unsafe %v, overlaps %d, processed %d of %d, errors %v; want safe, no overlap, all processed, none", s.Unsafe, s.Overlaps, s.Processed, s.Payments, s.Errors)
	}
}
