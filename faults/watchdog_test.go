package faults_test

import "testing"

// A watchdog keeps a slow holder's lease alive: the renewals go on while the
// work runs, so nobody else gets the lock. It does not survive a pause: the
// watchdog is paused with its process, the lease lapses, the payment's other
// delivery takes the lock, and the resumed holder writes too.
func TestWatchdog(t *testing.T) {
	t.Run("slow", func(t *testing.T) {
		r := run(t, "setnx-watchdog", "slow", small(pausePayments, false))
		struck(t, r)
		if s := r.Summary; s.Overlaps != 0 || s.Unsafe {
			t.Errorf("overlaps %d, unsafe %v; want no overlap and safe: the watchdog renews the lease", s.Overlaps, s.Unsafe)
		}
	})
	t.Run("pause", func(t *testing.T) {
		r := run(t, "setnx-watchdog", "pause", small(pausePayments, false))
		struck(t, r)
		if s := r.Summary; s.Overlaps == 0 || s.Duplicates == 0 || !s.Unsafe {
			t.Errorf("overlaps %d, duplicates %d, unsafe %v; want overlaps > 0, duplicates > 0, unsafe: the watchdog pauses with its process",
				s.Overlaps, s.Duplicates, s.Unsafe)
		}
	})
}
