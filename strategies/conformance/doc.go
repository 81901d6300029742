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
// quorum strategy survives a minority of dead nodes but not a majority.
//
// Cases that do not apply to a strategy, decided from its Info (no server to
// stop for an in-process strategy, no tokens without Info.Fencing, no quorum
// with one node), are not run and say so with t.Log. The control strategy
// nolock excludes nobody: for it the suite asserts that its exclusion check
// fails, because a checker that cannot fail proves nothing.
//
// Caveat: the cases stop and restart servers, so Run must not share its
// servers with anything else running at the same time, and it runs
// strategies one after another.
package conformance
