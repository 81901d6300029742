// Package redisutil holds what the Redis strategies (setnx, fencing,
// redislock, setnx-watchdog, redlock, redsync) share: client options tuned
// for a benchmark, entries with TLS and logins, the owner-checked release
// and extend scripts, unique owner values, a lease type for single-node
// locks (a strategies.Extender), and the classification of errors into
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
// # TLS and auth
//
// An entry of Config.RedisAddrs or Config.RedisSentinels is host:port or a
// URL, redis://user:password@host:port, or rediss://… for TLS
// (ParseEndpoint; LOCKBENCH_REDIS_ADDRS and LOCKBENCH_REDIS_SENTINELS take
// the same). The URL's user and password log in with AUTH user password (an
// ACL user; redis://:password@… is the default user); an entry without a
// login uses Config.RedisPassword. rediss:// verifies the server against
// the CA certificates of Config.RedisCACert (LOCKBENCH_REDIS_CACERT), or the
// system's roots, and the server name is the entry's host. With Sentinels,
// the entries' login is the Sentinels' own, all entries must agree on TLS
// and login, TLS applies to the primary too, and the primary's login is
// that of a URL-form Config.RedisMaster (rediss://user:password@name), else
// Config.RedisPassword. Errors name a node by host:port, never its login;
// a certificate the client does not trust and a refused login (WRONGPASS)
// are not strategies.ErrUnavailable but misconfigurations, reported at once
// in one line, also by the quorum strategies (FirstRefusal).
//
// Caveat: a lock lives on one Redis node (or one primary) as a plain key
// with a TTL. Nothing here survives a node that restarts without
// persistence or whose clock jumps, nor a failover to a replica that had
// not got the lock yet; that is what lockbench's faults measure. WAIT makes
// the last less likely, not impossible: the replica that acknowledged may
// die with the primary, and Redis' replication stays asynchronous.
package redisutil
