package faults_test

import (
	"testing"

	"github.com/lockbench/lockbench/loadgen"
)

// mysql-get-lock is session-bound as pg-advisory is: a reset of the
// holder's connection makes MariaDB drop its GET_LOCK lock at once, the
// payment's other delivery (waiting in GET_LOCK, its own connection reset
// too, so it waits again on a new one) takes it while the caught holder is
// still inside, and both write. The holder's Release then reports the lost
// lock.
func TestPartitionResetGetLock(t *testing.T) {
	r := run(t, "mysql-get-lock", resetFault, small(pausePayments, false))
	struck(t, r)
	s := r.Summary
	if s.Overlaps == 0 || s.Duplicates == 0 || !s.Unsafe {
		t.Errorf("overlaps %d, duplicates %d, unsafe %v; want overlaps > 0, duplicates > 0, unsafe",
			s.Overlaps, s.Duplicates, s.Unsafe)
	}
	if s.Errors[loadgen.ErrClassLostLock] == 0 {
		t.Errorf("errors %v; want the caught holder's Release to report the lost lock (%s)", s.Errors, loadgen.ErrClassLostLock)
	}
}

// A paused holder keeps its GET_LOCK lock for as long as the pause lasts:
// its connection stays up, and the lock has no TTL to run out.
func TestPauseGetLock(t *testing.T) {
	r := run(t, "mysql-get-lock", "pause", small(pausePayments, false))
	struck(t, r)
	if s := r.Summary; s.Overlaps != 0 || s.Unsafe {
		t.Errorf("overlaps %d, unsafe %v; want no overlap and safe: the session outlives the pause", s.Overlaps, s.Unsafe)
	}
}
