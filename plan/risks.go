package plan

import (
	"fmt"
	"strings"

	"github.com/lockbench/lockbench/results"
	"github.com/lockbench/lockbench/servers"
	"github.com/lockbench/lockbench/strategies"
)

// Risks says, in one line, what a strategy risks under faults; fenced is
// whether the store checks its tokens in this plan.
type Risks func(info strategies.Info, fenced bool) string

// Expected is the README's fault table applied to a strategy's registry
// entry: what each fault is expected to break, derived from whether the
// strategy excludes anyone (Control, CrossProcess, Transactional), whether
// its tokens are checked (fenced), whether it keeps its lease alive
// (KeepAlive) and what it needs from the servers (Need, and what package
// servers says their nodes do). No strategy is named, so a new one gets its
// line from its entry.
func Expected(info strategies.Info, fenced bool) string {
	switch {
	case info.Control:
		return "no lock: double-processes every duplicate delivery"
	case !info.CrossProcess:
		return "no exclusion across instances: double-processes duplicates sent to two instances"
	case info.Transactional:
		return "no lock server: safe under pause, slow and partition by " + txGuard[info.Transaction] + " in the payment's transaction; kill-node of its database ends the run"
	case info.SessionBound:
		return "no TTL: pause and slow work keep the lock; a reset connection (partition mode=reset, a restart, a failover) drops it under a live holder: double-processing; kill-node: unavailable (one node)"
	}
	// The Redis nodes lockbench starts keep their keys in memory only: a
	// node restarted empty, or whose clock jumps past the TTL, forgets the
	// lock, and with it any token counter it kept.
	forgets := servers.Forgets(info.Need.Backend)
	var parts []string
	// Work past the TTL breaks a lock as a pause does, unless the lease is
	// kept alive while the work runs.
	outlived := "pause past TTL, slow work past TTL"
	if info.KeepAlive {
		outlived = "pause past TTL (slow work keeps the lease alive)"
	}
	if fenced {
		// A lease outlived by a stopped holder still lets a second holder
		// in; the checked token is what keeps the first one's writes out.
		parts = append(parts, outlived+": stale writes rejected by the store (fenced)")
		switch {
		case forgets && info.Redelivers:
			// The queue's tokens carry its consumer's creation time, so
			// they do not start over: the broker forgets the message in
			// flight, and the token keeps the caught holder's write out.
			parts = append(parts, "restart-node: the message in flight forgotten, stale writes rejected by the store (fenced)")
		case forgets:
			parts = append(parts, "restart-node: tokens start over, the store refuses new holders")
		}
	} else {
		breaks := outlived
		if forgets {
			breaks += ", restart-node, clock-jump"
		}
		parts = append(parts, breaks+": double-processing")
	}
	switch n := info.Need.Nodes; {
	case info.Need.Backend == strategies.BackendNone:
	case n > 1:
		parts = append(parts, "survives kill-node (quorum)")
	case n == 1:
		parts = append(parts, "kill-node: unavailable (one node)")
	default: // the backend as a whole: a cluster with its own quorum
		parts = append(parts, "kill-node: unavailable without quorum")
	}
	return strings.Join(parts, "; ")
}

// Measured is the risks as a verdicts.json measured them: for each
// strategy, the faults that made it unsafe (in any trial; with trials,
// in k of N) and those under which it processed fewer than 99% of
// payments (the median trial), from the rows with the plan's fencing when
// the file has them.
func Measured(ss []results.Summary) Risks {
	return func(info strategies.Info, fenced bool) string { return measured(ss, info.Name, fenced) }
}

func measured(ss []results.Summary, name string, fenced bool) string {
	var rows []results.Summary
	for _, pass := range []bool{true, false} {
		for _, s := range ss {
			if s.Strategy == name && s.HasFault() && (!pass || s.Fencing == fenced) {
				rows = append(rows, s)
			}
		}
		if len(rows) > 0 {
			break
		}
	}
	if len(rows) == 0 {
		return "not in the verdicts file"
	}
	// One fault's trials are one verdict: unsafe when any trial was
	// ("pause (3/6 trials)"), unavailable by the median availability.
	var faults []string
	trials := map[string][]results.Summary{}
	for _, s := range rows {
		s.Finish() // trust the counters, not the file's derived fields
		if _, ok := trials[s.Fault]; !ok {
			faults = append(faults, s.Fault)
		}
		trials[s.Fault] = append(trials[s.Fault], s)
	}
	var unsafe, unavailable []string
	for _, f := range faults {
		ts := trials[f]
		var bad int
		var count int64
		avail := make([]float64, len(ts))
		for i, s := range ts {
			if s.Unsafe {
				bad++
				count += s.UnsafeCount()
			}
			avail[i] = s.Availability
		}
		median := results.EstimateOf(avail).Median
		switch {
		case bad > 0 && len(ts) > 1:
			unsafe = append(unsafe, fmt.Sprintf("%s (%d/%d trials)", f, bad, len(ts)))
		case bad > 0:
			unsafe = append(unsafe, fmt.Sprintf("%s (%d)", f, count))
		case median < 0.99:
			unavailable = append(unavailable, fmt.Sprintf("%s (%.0f%% processed)", f, 100*median))
		}
	}
	var parts []string
	if len(unsafe) > 0 {
		parts = append(parts, "unsafe under "+strings.Join(unsafe, ", "))
	}
	if len(unavailable) > 0 {
		parts = append(parts, "unavailable under "+strings.Join(unavailable, ", "))
	}
	if len(parts) == 0 {
		return fmt.Sprintf("safe and available under all %d faults run", len(faults))
	}
	return strings.Join(parts, "; ")
}

// txGuard names what protects a transactional strategy's payment.
var txGuard = map[strategies.Transaction]string{
	strategies.TxUniqueMarker: "the unique constraint and the guarded debit",
	strategies.TxRowLock:      "the account row's lock (FOR UPDATE)",
	strategies.TxOptimistic:   "the version check, retried on conflict",
}
