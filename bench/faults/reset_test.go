package faults_test

import (
	"testing"

	"github.com/lockbench/lockbench/loadgen"
)

// resetFault resets every connection to Postgres while a holder is inside
// its critical section, and keeps the holder inside for hold=500ms (the
// default, TTL/2 of the tests' 1s TTL): well within a lease's TTL.
const resetFault = "partition:mode=reset"

// A connection reset under a holder (a load balancer, a proxy, a failover)
// breaks a lock that lives as long as its session: the server drops
// pg-advisory's lock with the holder's connection, the payment's other
// delivery takes it, and the holder, which does not know until its Release
// reports ErrNotOwner, writes too. The trap makes it happen every run.
func TestPartitionResetAdvisory(t *testing.T) {
	ctx := deadline(t)
	r := run(ctx, t, "pg-advisory", resetFault, small(pausePayments, false))
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

// pg-onconflict's lease is a row on the server, not a session: it outlives
// the reset connection, so the contender still finds the claim live while
// the caught holder is inside (hold is within the TTL), and the store stays
// safe without fencing. The reset costs availability only: calls on the
// reset connections fail.
func TestPartitionResetLease(t *testing.T) {
	ctx := deadline(t)
	r := run(ctx, t, "pg-onconflict", resetFault, small(pausePayments, false))
	struck(t, r)
	s := r.Summary
	if s.Overlaps != 0 || s.Duplicates != 0 || s.Unsafe {
		t.Errorf("overlaps %d, duplicates %d, unsafe %v; want no overlap and safe: the lease outlives the connection",
			s.Overlaps, s.Duplicates, s.Unsafe)
	}
}
