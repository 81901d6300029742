// Package strategies defines the one small interface every distributed-lock
// strategy implements, and the registry that finds a strategy by name.
//
// A Strategy hands out Leases. A Lease knows its key, its fencing token (0 when
// the strategy has none) and the deadline until which it is valid (the zero
// time when it never expires on its own). Releasing a lease never deletes a
// lock that someone else holds now.
//
// Strategies register themselves from their own package's init function
// (database/sql's Register, go-ycsb's RegisterDBCreator); importing
// github.com/lockbench/lockbench/strategies/all registers every built-in one.
//
// Caveat: a Lease's validity is what the strategy believes when it was
// granted. A paused process, a restarted node or a jumping clock can end a lock
// early without the holder noticing; that is exactly what lockbench measures,
// so nothing in this package pretends otherwise.
package strategies
