// Package redislock is the bsm/redislock library (v0.9.4, the newest the Go
// module proxy serves) on one Redis node, used as a team would use it: one
// Client.Obtain per Acquire and Lock.Release, over a go-redis client built
// by redisutil (so timeouts and pools match setnx's).
//
// It is the recipe of package setnx in a library: the lock is SET key value
// NX PX ttl, run inside the library's obtain script (EVALSHA, falling back to
// EVAL when the node lost its script cache), and release is a
// compare-and-delete script, so a lease never deletes another holder's lock.
//
// Options, all at the library's defaults (Obtain is passed nil options):
//   - RetryStrategy NoRetry: one attempt per Acquire, which returns
//     strategies.ErrNotAcquired when the lock is held (redislock's
//     ErrNotObtained); lockbench retries with strategies.AcquireRetry;
//   - Token: 16 random bytes, base64 (URL alphabet, no padding); Metadata
//     empty. Config.Owner is not written, so a lock's value does not name
//     its instance;
//   - no deadline of its own: the caller's ctx bounds the call (the library
//     adds one of now+TTL only to a ctx without a deadline).
//
// The lock lives Config.TTL, truncated to whole milliseconds (PX's
// resolution). The Lease's Deadline is the time Obtain was called plus the
// TTL, by this client's clock: the key cannot expire earlier. (Lock.TTL
// would cost one more round trip per acquisition and say the same thing
// less conservatively.) Leases carry no fencing token.
//
// Release returns strategies.ErrNotOwner for redislock's ErrLockNotHeld (the
// key expired or holds another value), and errors from the node classified
// by redisutil.Classify (strategies.ErrUnavailable when it is unreachable).
//
// With Config.RedisWait, Acquire obtains the lock through a redislock
// client over one pinned connection (redislock.New takes any script
// runner), sends WAIT on it, and the lease keeps that connection for its
// Release: WAIT counts the acknowledgements of its own connection's writes
// only, and the library alone would send its script on any pooled one.
//
// Caveats: those of package setnx (unsafe under a process pause or slow work
// longer than the TTL, no fencing token, one node a single point of
// failure that forgets every lock when it restarts without persistence),
// and one of its own: each acquisition runs a Lua script (SET NX, then a
// GETRANGE on the held key when that fails, for re-obtaining with a custom
// token), which costs the server more than setnx's plain SET NX.
package redislock
