// Package redisutil holds what the Redis strategies (setnx, fencing, redlock)
// share: client options tuned for a benchmark, the owner-checked release and
// extend scripts, unique owner values, a lease type for single-node locks
// (a strategies.Extender), and the classification of errors into
// strategies.ErrUnavailable.
//
// The client options favour failing fast over hiding failures: no command
// retries (a retried SET NX whose first reply was lost would find its own
// value and report the lock as held by someone else), one dial attempt, short
// dial and I/O timeouts, and context deadlines applied to socket I/O so a
// per-node timeout (redlock) really bounds the call.
//
// Caveat: a lock lives on one Redis node as a plain key with a TTL. Nothing
// here survives a node that restarts without persistence or whose clock
// jumps; that is what lockbench's faults measure.
package redisutil
