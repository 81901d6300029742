package faults_test

import (
	"testing"

	"github.com/lockbench/lockbench/loadgen"
)

// pg-unique takes no lock: the processed marker's unique constraint and the
// guarded debit, in one transaction on the Postgres store, keep it safe
// under the faults that leave the store itself alone. Under pause the
// instance process is stopped inside its open transaction, after the marker
// insert and before the commit: the payment's other delivery waits on the
// uncommitted marker and, once the paused transaction commits, finds it.
func TestPgUniqueSafe(t *testing.T) {
	ctx := deadline(t)
	for _, fault := range []string{"pause", "slow", "partition"} {
		t.Run(fault, func(t *testing.T) {
			sc := small(pausePayments, false)
			sc.Store = loadgen.StorePostgres
			r := run(ctx, t, "pg-unique", fault, sc)
			struck(t, r)
			if fault == "slow" {
				// The order reaches the work inside the transaction.
				slowedSection(t, r)
			}
			s := r.Summary
			if s.Unsafe || s.Duplicates != 0 {
				t.Errorf("unsafe %v, duplicates %d; want safe, no duplicates", s.Unsafe, s.Duplicates)
			}
			if s.Processed == 0 {
				t.Errorf("processed 0 payments; want the run to have processed some")
			}
		})
	}
}
