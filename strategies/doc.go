// Package strategies defines the one small interface every distributed-lock
// strategy implements, and the registry that finds a strategy by name.
//
// A Strategy hands out Leases. A Lease knows its key, its fencing token (0 when
// the strategy has none) and the deadline until which it is valid (the zero
// time when it never expires on its own). Releasing a lease never deletes a
// lock that someone else holds now.
//
// Optional abilities are one-method interfaces found by type assertion
// (go-ycsb's BatchDB, vegeta's Closer): a Blocker strategy waits inside
// Acquire, an Extender lease can be renewed (the watchdog builds on it), a
// Waiter lease says whether its Acquire waited for a predecessor.
//
// A strategy's registry entry (Info) is data about it that the rest of
// lockbench asks instead of branching on its name: what it needs from the
// servers (Need: a backend and how many of its nodes), whether it fences,
// excludes across instances, is the control, takes no lock at all
// (Transactional), keeps its lease alive (KeepAlive) or lives as long as its
// connection (SessionBound), and where it is listed and how it is coloured
// (Order, Color).
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
