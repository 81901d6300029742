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
// A single-node lock reaches its node directly (Config.RedisAddrs[0]) or,
// with Config.RedisSentinels, through go-redis' failover client, which
// asks a Sentinel for the primary on every new connection and follows it
// after a failover (DialNode). With Config.RedisWait, Node.Take sends WAIT
// after the command that took the lock, on the same pinned connection
// (WAIT counts the acknowledgements of that connection's writes only), and
// releases a lock too few replicas acknowledged. Renewals and releases do
// not wait.
//
// Caveat: a lock lives on one Redis node (or one primary) as a plain key
// with a TTL. Nothing here survives a node that restarts without
// persistence or whose clock jumps, nor a failover to a replica that had
// not got the lock yet; that is what lockbench's faults measure. WAIT makes
// the last less likely, not impossible: the replica that acknowledged may
// die with the primary, and Redis' replication stays asynchronous.
package redisutil
