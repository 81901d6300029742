// Package fencing is the setnx lock plus a fencing token: one atomic Lua
// script takes the lock with SET key value NX PX ttl and, only if that
// succeeded, INCRs a per-key counter and returns it as the lease's token.
// Tokens are therefore strictly increasing across successive holders of a key
// and never issued to a contender that did not get the lock (a common recipe INCRs
// before it knows whether the SET succeeded, wasting tokens on losers).
//
// Leases implement strategies.Extender, as setnx's do; an extension keeps the
// lease's token, since the lock does not change hands.
//
// The lock alone is exactly as unsafe as setnx under a pause or slow work
// longer than the TTL. What makes it safe is the store: it remembers the
// highest token it has seen for a key and refuses writes carrying an older one
// (a fenced write, with its result checked).
//
// Caveats:
//   - The counter lives on the lock node. A node restarted without
//     persistence starts counting from 1 again, so tokens go backwards and the
//     store may refuse the new holder (or, with a store that forgot too,
//     accept a stale one). Run Redis with AOF when the tokens matter.
//   - Counters are never deleted: one small key per lock key, forever.
package fencing
