// Package setnx is the classic single-node Redis lock: SET key value NX PX ttl
// with a unique owner value, released by a compare-and-delete Lua script so a
// lease never deletes a lock that someone else holds now.
//
// Acquire makes one attempt and returns strategies.ErrNotAcquired when the lock
// is held; callers retry with strategies.AcquireRetry. Leases implement
// strategies.Extender: a compare-and-extend script (redisutil.ExtendScript)
// renews the lock only while it still holds the lease's value.
//
// Caveats, which lockbench's faults demonstrate:
//   - setnx is unsafe under a process pause (GC, SIGSTOP) or slow work longer
//     than the TTL: the key expires, another instance takes the lock, and the
//     paused holder carries on believing it owns it. There is no fencing token
//     for the store to reject its late writes (see package fencing). Extend
//     helps slow work that renews in time, never a pause: a paused holder
//     renews nothing.
//   - One node is a single point of failure: when it is down, nobody gets the
//     lock (kill-node), and when it restarts without persistence every lock
//     is forgotten (restart-node).
//   - Behind Sentinels (Config.RedisSentinels) the lock lives on the
//     primary and reaches its replicas asynchronously: a primary that dies
//     right after granting a lock can be replaced by a replica that never
//     had it, and the lock is granted again (the failover fault).
//     Config.RedisWait makes Acquire wait for replicas (WAIT) and count a
//     lock they did not acknowledge as not acquired; see
//     redisutil.Node.Take.
package setnx
