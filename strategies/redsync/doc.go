// Package redsync is the go-redsync/redsync v4 library's Redlock, used as a
// team would use it: one redsync.Mutex per acquisition over the same Redis
// nodes as package redlock (all of Config.RedisAddrs, registered with
// redlock.DefaultNodes = 5), through the library's go-redis v9 pool adapter
// (redis/goredis/v9) and go-redis clients built by redisutil.Options, so
// timeouts and pools match redlock's.
//
// Options set here:
//   - WithExpiry(Config.TTL), truncated to whole milliseconds (PX's
//     resolution). The library's default is 8s.
//   - WithTries(1): one round per Acquire. The library's default is 32 tries
//     with a random 50-250ms delay between them; lockbench retries itself
//     (strategies.AcquireRetry), as it does for every non-blocking strategy.
//
// Everything else is at the library's defaults:
//   - drift factor 0.01: the validity is TTL − elapsed − TTL×0.01, counted
//     from the start of the round (no constant term; package redlock adds
//     2ms for Redis' millisecond expiry);
//   - timeout factor 0.05: one context deadline of TTL×0.05 bounds each
//     round's SET NX on all nodes together, and the same again bounds the
//     undo of a failed round (redlock: min(50ms, TTL/10) per round);
//   - quorum len(nodes)/2+1;
//   - value: 16 random bytes, base64. Config.Owner is not written, so a
//     lock's value does not name its instance;
//   - no pool shuffling, no fail-fast (every round waits for every node or
//     the round's deadline), no SET NX on extend;
//   - the release script (EVALSHA of a compare-and-delete, falling back to
//     EVAL when the node lost its script cache) is not preloaded: the first
//     release on a node, and the first after it restarts, costs one more
//     round trip.
//
// Acquire returns strategies.ErrNotAcquired when the round fails because the
// lock is held, the votes split, nodes answered too slowly, or no validity
// was left, and an error wrapping strategies.ErrUnavailable when so many
// nodes fail outright (refused, reset, erring; not merely slow) that no
// quorum is possible: the rule of package redlock, applied to redsync's
// per-node errors (*redsync.RedisError, *redsync.ErrNodeTaken,
// *redsync.ErrTaken), which the returned error still wraps. The Lease's
// Deadline is the mutex's Until(); it carries no fencing token.
//
// Release is UnlockContext: the library's script deletes a node's key only
// if it still holds the lease's value, so it never deletes another holder's
// lock. It returns nil when a quorum of nodes still held the value (redsync's
// rule); strategies.ErrNotOwner when the nodes that held it plus those that
// failed to answer are too few for a quorum, the rest having answered that
// the key is gone (redsync.ErrLockAlreadyExpired) or holds another value
// (*redsync.ErrNodeTaken, *redsync.ErrTaken); and an error wrapping
// strategies.ErrUnavailable when the failed nodes leave it undecided.
//
// Caveats: those of package redlock (process pauses, clock jumps, nodes
// restarted without persistence; no fencing token), and those of the
// library at its defaults:
//   - a failed round's undo is bounded by the caller's context: when ctx
//     ends mid-round, the keys a minority granted stay until their TTL;
//   - the round's deadline is 5% of the TTL, so a short TTL gives slow
//     nodes little time (25ms at 500ms), and without fail-fast one stopped
//     node holds every round up for that long (100ms at 2s, 500ms at 10s).
package redsync
