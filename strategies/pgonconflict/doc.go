// Package pgonconflict is the "pg-onconflict" strategy: a lock is a row in
// the Postgres table lockbench_locks, claimed with one INSERT … ON CONFLICT
// statement, the way ShedLock does it. The row carries a lease (expires_at,
// on the database's clock) so that a crashed holder's claim lapses, and a
// fencing token drawn from the sequence lockbench_lock_tokens.
//
// Acquire is non-blocking: one statement, which either inserts the key's row,
// or takes over its row when the previous claim has expired or was released,
// or finds the claim live and returns strategies.ErrNotAcquired. Release
// marks the row free (expires_at = -infinity) if the claim is still this
// lease's; rows are never deleted, which is what keeps tokens monotonic (see
// claimSQL). Leases implement strategies.Extender: Extend moves expires_at
// on, by the database's clock, only while the row still names the lease's
// owner and token and the claim is live (see extendSQL).
//
// The factory creates the table and the sequence if they do not exist,
// serialized by an advisory lock, because concurrent CREATE … IF NOT EXISTS
// statements can fail with a unique violation in the system catalogs.
//
// # The claim statement
//
// claimSQL's ON CONFLICT path locks the key's row before it evaluates its
// WHERE, even when the claim turns out to be live, so every failed attempt
// would take (and log) a row lock and queue behind the others. The NOT
// EXISTS filter, evaluated first on the statement's snapshot without
// locking, turns those attempts away at once. It only decides "not
// acquired": a claim that the snapshot shows as live was live when the
// statement began. Whether the lock is taken is still decided by the ON
// CONFLICT WHERE, on the row's latest version, under its lock.
//
// The token of the inserted row is drawn on every attempt that passes the
// filter; on the update path, where SET draws a fresh one (see claimSQL for
// why), it only leaves a gap in the sequence.
//
// # Caveats
//
//   - The lease is judged by the database's clock (now()), never the
//     client's, so clients' clocks do not matter; Lease.Deadline (client
//     time before the claim + TTL) is only the client's estimate. now() is
//     the transaction's start, so a claim that waited on a row lock gets a
//     slightly shorter lease, never a longer one.
//   - Nothing keeps a lease alive but its holder's Extend calls: a holder that
//     is slow or paused for longer than the TTL without extending loses the
//     lock and does not know until Release or Extend returns
//     strategies.ErrNotOwner. The fencing token protects the store then.
//   - One row per lock key ever taken stays in the table (a few dozen bytes
//     each); drop the table to reset it.
//   - The database is one server: while it is down, no lock can be taken.
//     Every statement (with the wait for a pooled connection) is bounded by
//     DefaultStatementTimeout, so a stopped or hung server is reported within
//     it, as an error wrapping strategies.ErrUnavailable. Pooled connections
//     to a crashed server fail once each after it restarts.
package pgonconflict
