package faults_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/lockbench/lockbench/faults"
	"github.com/lockbench/lockbench/internal/usage"
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
	r := run(t, "pg-advisory", resetFault, small(pausePayments, false))
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

// The counterpart: a paused holder keeps pg-advisory's lock for as long as
// the pause lasts, since its connection stays up, so pause (which breaks
// every TTL lock without fencing, TestPauseUnfencedLeases) cannot break it.
func TestPauseAdvisory(t *testing.T) {
	r := run(t, "pg-advisory", "pause", small(pausePayments, false))
	struck(t, r)
	if s := r.Summary; s.Overlaps != 0 || s.Unsafe {
		t.Errorf("overlaps %d, unsafe %v; want no overlap and safe: the session outlives the pause", s.Overlaps, s.Unsafe)
	}
}

// pg-onconflict's lease is a row on the server, not a session: it outlives
// the reset connection, so the contender still finds the claim live while
// the caught holder is inside (hold is within the TTL), and the store stays
// safe without fencing. The reset costs availability only: calls on the
// reset connections fail.
func TestPartitionResetLease(t *testing.T) {
	r := run(t, "pg-onconflict", resetFault, small(pausePayments, false))
	struck(t, r)
	s := r.Summary
	if s.Overlaps != 0 || s.Duplicates != 0 || s.Unsafe {
		t.Errorf("overlaps %d, duplicates %d, unsafe %v; want no overlap and safe: the lease outlives the connection",
			s.Overlaps, s.Duplicates, s.Unsafe)
	}
}

// partition's reset parameters: hold= belongs to mode=reset, and must
// exceed for= (the contender must be able to connect while the holder is
// still inside). Parse builds the fault, so it checks them.
func TestParseReset(t *testing.T) {
	for _, tc := range []struct {
		in      string
		wantErr string // "" for success
	}{
		{"partition:mode=reset", ""},
		{"partition:mode=reset,for=200ms,hold=1s,node=0,at=0.5", ""},
		// hold within for: nobody could take the lock from the holder.
		{"partition:mode=reset,for=1s,hold=500ms", "must exceed for"},
		// hold has no meaning for cut and delay.
		{"partition:hold=1s", `unknown parameter "hold"`},
		{"partition:mode=delay,hold=1s", `unknown parameter "hold"`},
	} {
		_, err := faults.Parse(tc.in)
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("Parse(%q) = %v; want no error", tc.in, err)
		case tc.wantErr == "":
		case err == nil:
			t.Errorf("Parse(%q) = nil; want an error containing %q", tc.in, tc.wantErr)
		case !errors.As(err, new(*usage.Error)):
			t.Errorf("Parse(%q) = %v; want a *usage.Error", tc.in, err)
		case !strings.Contains(err.Error(), tc.wantErr):
			t.Errorf("Parse(%q) = %q; want it to contain %q", tc.in, err, tc.wantErr)
		}
	}
}
