package faults_test

import (
	"testing"

	"github.com/lockbench/lockbench/loadgen"
)

// The transactional strategies take no lock server: pg-unique's processed
// marker under a unique constraint, pg-for-update's row lock and
// pg-optimistic's version check, each in one transaction on the Postgres
// store, keep them safe under the faults that leave the store itself alone.
// Under pause the instance process is stopped inside its open transaction,
// after the claim and before the commit: the payment's other delivery waits
// on the uncommitted marker or row lock (or, optimistic, fails its version
// check) and, once the paused transaction commits, finds the payment
// processed.
func TestTransactionalSafe(t *testing.T) {
	for _, name := range []string{"pg-unique", "pg-for-update", "pg-optimistic"} {
		for _, fault := range []string{"pause", "slow", "partition"} {
			t.Run(name+"/"+fault, func(t *testing.T) {
				sc := small(pausePayments, false)
				sc.Store = loadgen.StorePostgres
				r := run(t, name, fault, sc)
				struck(t, r)
				s := r.Summary
				switch {
				case fault != "slow":
				case name == "pg-optimistic" && s.Conflicts > 0:
					// The slowed attempt's version check failed (the
					// account moved on in 2.5s): its work was thrown away
					// and the delivery tried again, so no critical section
					// that counts lasted the 2.5s.
				default:
					// The order reaches the work inside the transaction.
					slowedSection(t, r)
				}
				if s.Unsafe || s.Duplicates != 0 || s.LostUpdates != 0 {
					t.Errorf("unsafe %v, duplicates %d, lost updates %d; want safe", s.Unsafe, s.Duplicates, s.LostUpdates)
				}
				if s.Processed == 0 {
					t.Errorf("processed 0 payments; want the run to have processed some")
				}
			})
		}
	}
}
