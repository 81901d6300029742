package plan

import (
	"testing"

	"github.com/lockbench/lockbench/results"
	"github.com/lockbench/lockbench/strategies"
	_ "github.com/lockbench/lockbench/strategies/all"
)

// The expected risks of the built-in strategies, from their registry
// entries: a change to an entry (or to the derivation) shows here.
func TestExpected(t *testing.T) {
	cases := []struct {
		strategy string
		fenced   bool
		want     string
	}{
		// The control and the in-process lock exclude nobody across instances.
		{"nolock", false, "no lock: double-processes every duplicate delivery"},
		{"mutex", false, "no exclusion across instances: double-processes duplicates sent to two instances"},
		// One in-memory Redis node: it forgets the lock on restart or a
		// clock jump, and is down when killed.
		{"setnx", false, "pause past TTL, slow work past TTL, restart-node, clock-jump: double-processing; kill-node: unavailable (one node)"},
		{"fencing", false, "pause past TTL, slow work past TTL, restart-node, clock-jump: double-processing; kill-node: unavailable (one node)"},
		// Fenced, the store rejects the stale writes; the token counter
		// still lives in that Redis.
		{"fencing", true, "pause past TTL, slow work past TTL: stale writes rejected by the store (fenced); restart-node: tokens start over, the store refuses new holders; kill-node: unavailable (one node)"},
		// A quorum of independent nodes survives one killed.
		{"redlock", false, "pause past TTL, slow work past TTL, restart-node, clock-jump: double-processing; survives kill-node (quorum)"},
		// A cluster as a whole: down only without its quorum; its session
		// keepalive outlasts slow work, not a pause.
		{"etcd", false, "pause past TTL (slow work keeps the lease alive): double-processing; kill-node: unavailable without quorum"},
		{"etcd", true, "pause past TTL (slow work keeps the lease alive): stale writes rejected by the store (fenced); kill-node: unavailable without quorum"},
		{"pg-onconflict", true, "pause past TTL, slow work past TTL: stale writes rejected by the store (fenced); kill-node: unavailable (one node)"},
		// No lock: the database's constraint is the protection.
		{"pg-unique", false, "no lock server: safe under pause, slow and partition by the unique constraint and the guarded debit in the payment's transaction; kill-node of its database ends the run"},
		{"pg-for-update", false, "no lock server: safe under pause, slow and partition by the account row's lock (FOR UPDATE) in the payment's transaction; kill-node of its database ends the run"},
		{"pg-optimistic", false, "no lock server: safe under pause, slow and partition by the version check, retried on conflict in the payment's transaction; kill-node of its database ends the run"},
	}
	for _, tc := range cases {
		t.Run(tc.strategy, func(t *testing.T) {
			info, ok := strategies.Lookup(tc.strategy)
			if !ok {
				t.Fatalf("%s is not registered", tc.strategy)
			}
			if got := Expected(info, tc.fenced); got != tc.want {
				t.Errorf("Expected(%s, fenced %v) = %q; want %q", tc.strategy, tc.fenced, got, tc.want)
			}
		})
	}
}

func TestMeasured(t *testing.T) {
	ss := []results.Summary{
		{Strategy: "setnx", Fault: "none", Processed: 10, Payments: 10},
		{Strategy: "setnx", Fault: "pause", Duplicates: 3},
		{Strategy: "setnx", Fault: "kill-node", Payments: 10, Processed: 4, Availability: 0.4},
		{Strategy: "fencing", Fault: "pause", Fencing: true, StaleRejected: 2, Availability: 1},
		{Strategy: "fencing", Fault: "pause", Fencing: false, Duplicates: 1},
		// Three trials of redlock under pause, one unsafe.
		{Strategy: "redlock", Fault: "pause", Trial: 1, Payments: 10, Processed: 10},
		{Strategy: "redlock", Fault: "pause", Trial: 2, Payments: 10, Processed: 10, Duplicates: 2},
		{Strategy: "redlock", Fault: "pause", Trial: 3, Payments: 10, Processed: 10},
	}
	cases := []struct {
		name, strategy string
		fenced         bool
		want           string
	}{
		// Unsafe faults first, then those that cost availability.
		{"unsafe and unavailable", "setnx", false, "unsafe under pause (3); unavailable under kill-node (40% processed)"},
		// The rows with the plan's fencing are the ones that count.
		{"fenced row chosen", "fencing", true, "safe and available under all 1 faults run"},
		{"unfenced row chosen", "fencing", false, "unsafe under pause (1)"},
		// A fault's trials are one verdict: k of N unsafe.
		{"trials", "redlock", false, "unsafe under pause (1/3 trials)"},
		// A strategy the file never ran says so.
		{"missing", "etcd", true, "not in the verdicts file"},
	}
	risks := Measured(ss)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := risks(strategies.Info{Name: tc.strategy}, tc.fenced); got != tc.want {
				t.Errorf("got %q; want %q", got, tc.want)
			}
		})
	}
}
