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
//   - On a replicated Redis (Config.RedisSentinels) the counter is
//     replicated asynchronously like the lock: a failover to a replica
//     that missed the last INCRs hands the same tokens out again, and a
//     store that only refuses tokens older than the newest it has seen
//     lets a reused one through (lockbench's failover fault shows it);
//     --fencing strict, which also refuses a token no newer than the last
//     applied write's, does not. WAIT (Config.RedisWait) narrows the gap;
//     only a counter in a linearizable store closes it.
//   - Counters are never deleted: one small key per lock key, forever.
package fencing
