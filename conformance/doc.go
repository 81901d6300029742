// Package conformance runs every registered lock strategy through one table
// of cases against real servers, in the manner of redsync's makeCases: a new
// strategy gets every test for free by registering itself.
//
// The cases check what the strategies package promises: mutual exclusion
// among 32 contenders (sharing one strategy object, and with one object each
// for cross-process strategies), that a stale lease cannot release someone
// else's lock, that an expired lease frees the lock (and not before its
// Deadline), that a cancelled context returns promptly, that a stopped server
// yields an error within 5s rather than a hang (and that the strategy recovers
// when the server is back), that fencing tokens strictly increase, and that a
// quorum strategy survives a minority of dead nodes but not a majority; that
// an Extender lease outlives its TTL while renewed and cannot renew a lock
// someone else took since; and, for a transactional strategy (which takes
// no lock), that its factory fails promptly with its database down.
//
// The servers come from the Env: servers.TargetFor answers each strategy's
// Need with the endpoints of exactly the nodes it uses, and the nodes the
// cases may stop when the test started them (EnvOf).
//
// Cases that do not apply to a strategy, decided from its Info (no server to
// stop for an in-process strategy, no tokens without Info.Fencing, no quorum
// with one node, no lock for a transactional one), are skipped with t.Skip
// and their reason. The control strategy
// nolock excludes nobody: for it the suite asserts that its exclusion check
// fails, because a checker that cannot fail proves nothing.
//
// Caveat: the cases stop and restart servers, so Run must not share its
// servers with anything else running at the same time, and it runs
// strategies one after another.
package conformance
