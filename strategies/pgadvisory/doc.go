// Package pgadvisory is the "pg-advisory" strategy: a Postgres session-level
// advisory lock (pg_try_advisory_lock), held on a connection that the lease
// keeps out of the pool for as long as it holds the lock.
//
// Acquire takes a connection from the strategy's pool and runs
// `SELECT pg_try_advisory_lock($1)` on it, with the lock key hashed to a
// bigint by LockID (FNV-64a). On false the connection goes back to the pool
// and Acquire returns strategies.ErrNotAcquired; on true the lease keeps the
// connection. Release runs `SELECT pg_advisory_unlock($1)` on that same
// connection and returns it to the pool. Acquire is non-blocking (one
// attempt); leases carry no fencing token.
//
// # Defaults
//
//   - DefaultMaxConns (32) connections per strategy object, opened on
//     demand; DefaultWarmConns (8) of them when New returns. A held lease
//     occupies one, so an instance can hold up to 32 locks at once; its
//     workers queue for a connection beyond that.
//   - DefaultStatementTimeout (3s) bounds every statement together with
//     the wait for a pooled connection, DefaultConnectTimeout (5s) one
//     connection attempt: a stopped server is reported within seconds, as
//     an error wrapping strategies.ErrUnavailable (the approach of
//     pg-onconflict).
//
// # Caveats
//
//   - The lock has no TTL: it lives exactly as long as the session that
//     took it, and Lease.Deadline is the zero time. A paused or slow holder
//     keeps the lock however long it takes, as long as its connection stays
//     up, so the pause and slow faults do not break it. What breaks it is
//     the connection dying under a holder that carries on: a server restart
//     or failover, a load balancer or proxy resetting connections, an idle
//     timeout on the way, a pooler between client and server (PgBouncer in
//     transaction or statement pooling mode, where "the session" is not
//     one server connection at all). The server then drops the lock at
//     once, another client takes it, and the first holder does not know
//     until Release, which reports strategies.ErrNotOwner. The partition
//     fault's mode=reset stages exactly that (package faults).
//   - Conversely, a holder whose connection is cut off without being closed
//     (a network partition that drops packets) keeps its lock on the server
//     until the server notices, which without TCP keepalives can take hours.
//   - Close ends every session of the strategy, the held ones too: their
//     locks are freed at once, as when a process exits and the kernel
//     closes its sockets. A TTL lock would instead outlive Close by its TTL.
//   - A dead or doubtful connection is never returned to the pool: after an
//     error, or an unlock that found no lock, the connection is closed, so
//     that no later Acquire can find a lock still held by its session
//     (advisory locks are re-entrant: a session that holds one is granted
//     it again).
//   - Lock ids are 64-bit hashes, so two keys can collide, with odds of
//     about n²/2⁶⁵ among n keys (one in 3.7·10⁷ for a million keys). A
//     collision makes the two keys exclude each other: slower, never
//     unsafe. The ids share the database's bigint advisory-lock space with
//     every other user of it (pg-onconflict's schema lock is one such id).
//   - Every lock occupies a slot of the server's shared lock table, sized
//     by max_locks_per_transaction × max_connections.
package pgadvisory
