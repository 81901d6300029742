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
// # Pool health check
//
// Every time it takes a connection from the pool, go-redis peeks at its
// socket (a MSG_PEEK recvfrom) to find connections the server closed: one
// more system call per command than redis-benchmark makes, about a fifth of
// a lock cycle's client CPU on a small VM. The dialer wraps each connection
// in an idleConn, which skips that peek when the connection read a reply
// less than HealthCheckIdle (1ms) ago. A connection goes stale when its
// server closes it (a killed or restarted node, a cut partition). A node
// that is down for longer than HealthCheckIdle, as every restart is, leaves
// only idle connections behind, and those are still peeked at and dropped
// before a command is sent, as with go-redis alone. Only a connection used
// in the last millisecond to a node that died in that millisecond fails its
// next command (as unavailable, and leaves the pool): the node did die under
// a live client.
//
// # Caveats
//
// A lock lives on one Redis node (or one primary) as a plain key
// with a TTL. Nothing here survives a node that restarts without
// persistence or whose clock jumps, nor a failover to a replica that had
// not got the lock yet; that is what lockbench's faults measure. WAIT makes
// the last less likely, not impossible: the replica that acknowledged may
// die with the primary, and Redis' replication stays asynchronous.
package redisutil
