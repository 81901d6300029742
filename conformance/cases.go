package conformance

import (
	"github.com/lockbench/lockbench/strategies"
)

// testCase is one row of the table every strategy runs through.
type testCase struct {
	name string
	// notRun says why the case does not apply to the strategy under test,
	// or "" when it does; nil means it applies to every strategy.
	notRun func(h *harness) string
	run    func(t T, h *harness)
	// noLock marks a case that applies to a transactional strategy, which
	// takes no lock (Info.Transactional); every other case is about a lock.
	noLock bool
}

// makeCases returns the table, in the order the cases run. The cases that
// stop servers come last but one, and restart them before they return.
func makeCases() []testCase {
	return []testCase{
		// A lease has the key it was asked for, a token exactly when the
		// strategy fences, and a deadline that is zero or in the future and
		// within TTL; it keeps a second contender out; releasing it twice
		// reports ErrNotOwner the second time.
		{name: "lease", run: testLease},
		// 32 contenders sharing one strategy object never overlap in the
		// critical section (nolock must be caught overlapping).
		{name: "exclusion-shared", run: func(t T, h *harness) { testExclusion(t, h, false) }},
		// The same with one strategy object per contender, as separate
		// instances would have: cross-process strategies never overlap,
		// in-process ones must be caught overlapping.
		{name: "exclusion-per-contender", run: func(t T, h *harness) { testExclusion(t, h, true) }},
		// A released lease cannot release the lock that B took since: A gets
		// ErrNotOwner and B still holds the lock.
		{name: "stale-release-after-release", notRun: excludesNobody, run: testStaleAfterRelease},
		// A lease that expired cannot release the lock that B took since.
		{name: "stale-release-after-expiry", notRun: inProcess, run: testStaleAfterExpiry},
		// A holder that stops (closes its strategy without releasing) loses
		// the lock after its TTL: another contender takes it within the
		// tolerance, and not before the holder's Deadline.
		{name: "expiry", notRun: inProcess, run: testExpiry},
		// Acquire returns promptly with an error once its context is
		// cancelled or past its deadline, also while it waits for a held lock.
		{name: "cancel", run: testCancel},
		// A strategy that declares Info.KeepsNoContext leaves nothing
		// registered with a call's context (a derived statement timeout)
		// once Acquire or Release returns.
		{name: "keeps-no-context", notRun: keepsContext, run: testKeepsNoContext},
		// Successive holders of one key get strictly increasing tokens.
		{name: "fencing-order", notRun: notFencing, run: testFencingOrder},
		// Leases that implement strategies.Extender: A extends a ShortTTL
		// lease until it has lived well past its original Deadline, with B
		// kept out and A's Deadline moving on; once A stops, B takes the
		// lock, and A's Extend returns ErrNotOwner without extending B's
		// lock. With the servers killed, Extend fails within 5s with
		// ErrUnavailable.
		{name: "extend", notRun: notExtender, run: testExtend},
		// With its servers killed a strategy fails within 5s, both Acquire on
		// an existing object and New; after a restart the old object works
		// again.
		{name: "server-down", notRun: cannotStop, run: testServerDown},
		// A quorum strategy still acquires with a minority of its nodes dead
		// and fails promptly with a majority dead.
		{name: "quorum", notRun: noQuorum, run: testQuorum},
		// On a replicated Redis, the primary killed in the middle of a
		// stream of acquires: each returns a lease or an error within 5s,
		// and once a replica is promoted the same object acquires again.
		{name: "failover", notRun: notReplicated, run: testFailoverStream},
		// A transactional strategy's factory fails within 5s with its
		// database down, and works again after a restart.
		{name: "transaction-down", notRun: locking, run: testTransactionDown, noLock: true},
	}
}

func excludesNobody(h *harness) string {
	if h.control() {
		return "it is the control and excludes nobody"
	}
	return ""
}

func inProcess(h *harness) string {
	if !h.info.CrossProcess {
		return "Info.CrossProcess is false: an in-process lock has no TTL"
	}
	return ""
}

func notFencing(h *harness) string {
	if !h.info.Fencing {
		return "Info.Fencing is false: leases carry no token"
	}
	return ""
}

func cannotStop(h *harness) string {
	if h.info.Need.Backend == strategies.BackendNone {
		return "Info.Need has no backend: no server to stop"
	}
	if h.nodes() == nil {
		return "Env.Cluster did not start the " + h.target.Noun() + "s: nothing the test may stop"
	}
	return ""
}

func noQuorum(h *harness) string {
	if h.info.Need.Nodes < 3 {
		return "not a quorum lock (Info.Need.Nodes < 3)"
	}
	return cannotStop(h)
}

func notExtender(h *harness) string {
	if why := excludesNobody(h); why != "" {
		return why
	}
	if why := inProcess(h); why != "" {
		return why
	}
	if !h.extends() {
		return "its leases do not implement strategies.Extender"
	}
	return ""
}

// locking is notRun for the cases of transactional strategies.
func locking(h *harness) string {
	if !h.info.Transactional {
		return "the strategy takes a lock: server-down covers it"
	}
	return cannotStop(h)
}

// lockCase says why a lock case does not apply to a transactional strategy.
func lockCase(h *harness) string {
	if h.info.Transactional {
		return "Info.Transactional: the strategy takes no lock, so no lock case applies; the store's Process tests (loadgen/store) and the verdicts check its safety"
	}
	return ""
}
