// Package mysqllock is the "mysql-get-lock" strategy: a MariaDB (or MySQL)
// named user lock, GET_LOCK(name, timeout), held on a connection that the
// lease keeps out of the pool for as long as it holds the lock, and given
// up with RELEASE_LOCK(name) on that same connection. It is session-bound
// as pg-advisory is: no TTL, no fencing token.
//
// Acquire takes a connection from the strategy's pool (database/sql over
// github.com/go-sql-driver/mysql) and runs `SELECT GET_LOCK(?, 0)` on it,
// with the lock key as the lock's name (LockName). When another session
// holds the lock it waits on the server, `SELECT GET_LOCK(?, t)`, where t
// is what is left of the acquire timeout (the context's deadline), in
// fractional seconds (the server takes microseconds), less
// DefaultDeadlineMargin so that the server's answer arrives before the
// deadline does. Without a deadline it waits in slices of DefaultWaitSlice
// until the context is done. On a timeout the connection goes back to the
// pool and Acquire returns strategies.ErrNotAcquired; on success the lease
// keeps the connection. The strategy blocks (strategies.Blocker): callers
// give it a deadline instead of retrying, and its leases say whether the
// first try found the lock held (strategies.Waiter).
//
// How the configuration maps: Config.TTL is not used, the lock lives as
// long as its session; the acquire timeout is GET_LOCK's timeout, as
// above; leases carry no token (Token returns 0) and their Deadline is the
// zero time.
//
// # Defaults
//
//   - DefaultMaxConns (32) connections per strategy object, opened on
//     demand and all kept idle between uses; DefaultWarmConns (8) of them
//     when New returns. A held lease occupies one, and so does a waiting
//     Acquire.
//   - DefaultStatementTimeout (3s) bounds every statement but GET_LOCK's
//     wait, together with the wait for a pooled connection;
//     DefaultConnectTimeout (5s) is the driver's dial timeout unless the
//     DSN sets one (timeout=…): a stopped server is reported within
//     seconds, as an error wrapping strategies.ErrUnavailable.
//   - Parameters are interpolated by the driver (interpolateParams): one
//     round trip a statement, no server-side prepared statements.
//   - The driver's own logging (every failed read, to stderr) is off.
//
// # Caveats
//
//   - The lock has no TTL: it lives exactly as long as the session that
//     took it. A paused or slow holder keeps it as long as its connection
//     stays up; a connection that dies under a holder that carries on (a
//     server restart, a load balancer or proxy resetting connections, an
//     idle timeout such as wait_timeout) frees it at once, another client
//     takes it, and the first holder does not know until Release, which
//     reports strategies.ErrNotOwner. The partition fault's mode=reset
//     stages exactly that (package faults).
//   - GET_LOCK is re-entrant per session: a session that holds a lock is
//     granted it again, and n grants need n releases. A connection whose
//     RELEASE_LOCK failed or found no lock of its own, or whose GET_LOCK
//     ended in an error (the server may have granted it before the reply
//     was lost), is therefore closed, never returned to the pool: no later
//     Acquire can find a lock still held by its session.
//   - A context cancelled while GET_LOCK waits closes the connection (the
//     driver's cancellation), but the server's thread waits on until the
//     lock is free or its timeout passes, then takes the lock and gives it
//     up at once as it finds its client gone: a moment's delay to the next
//     holder, never a second one.
//   - Close ends every session of the strategy, the held ones too: their
//     locks are freed at once, as when a process exits.
//   - Lock names longer than MaxNameLen (64) characters, which MySQL 5.7
//     and later refuse, are replaced by a hash of the key (LockName). Names
//     are server-wide: they share the namespace of every database and user
//     of the server.
package mysqllock
