// Package etcdlock is the "etcd" strategy: etcd's own lock recipe,
// concurrency.Mutex, on a concurrency.Session whose lease has the strategy's
// TTL. Acquire blocks (the strategy is a strategies.Blocker): waiters queue in
// etcd by the revision at which they created their key under the lock's
// prefix, and the oldest one holds the lock. The fencing token is the
// holder's key's create revision.
//
// # Sessions
//
// A session's lease is what keeps its locks alive: the client sends
// keepalives every TTL/3, and when they stop (a paused or dead process, an
// unreachable cluster) the server deletes every key on the lease after the
// TTL, so the next waiter gets the lock. Normally one session serves all of
// an instance's locks. It is replaced once its lease has expired: a session
// whose Done channel is closed is never used again.
//
// A Mutex's key is the session's lease ID under the lock's prefix, so two
// Lock calls on one key through one session would both believe they hold the
// lock (the second "reuses" the first's key). The strategy therefore never
// lets one session wait for or hold the same lock key twice at once; a second
// concurrent Acquire of a key in one instance gets another session. A session
// that may have left a key behind (a Lock or Release whose outcome is
// unknown) is retired: it takes no new locks and its lease is revoked once
// its other locks are released.
//
// # No Extend
//
// Leases do not implement strategies.Extender, on purpose. The session's
// keepalive already renews the lease every TTL/3 for as long as the process
// runs, which is what a watchdog calling Extend would do; and Extend could
// not keep its promise: an etcd lease is only ever renewed to the TTL it was
// granted with, so a longer ttl cannot be honoured, and the lease is the
// session's, shared by every lock the session holds, so one lock cannot be
// extended alone.
//
// # TLS and auth
//
// https:// endpoints are reached with TLS, verified by the CA certificates
// of Config.EtcdCACert (LOCKBENCH_ETCD_CACERT) or the system's roots;
// Config.EtcdCert and Config.EtcdKey (LOCKBENCH_ETCD_CERT,
// LOCKBENCH_ETCD_KEY) are the client certificate for members that check
// one (--client-cert-auth). Config.EtcdUser and Config.EtcdPassword
// (LOCKBENCH_ETCD_USER, LOCKBENCH_ETCD_PASSWORD) log in to a cluster with
// auth enabled; the client renews its token itself. gRPC reports a
// certificate it does not trust as a dial timeout, so New first does one
// TLS handshake of its own and says at once when the certificate is the
// problem, and after a failed connection it asks again whether the member
// refused the client's certificate (or its lack of one); a wrong user or
// password fails New with etcd's own refusal. None of these is
// strategies.ErrUnavailable.
//
// # Caveats
//
//   - TTLs are whole seconds in etcd: Config.TTL is rounded up to a whole
//     second (at least 1), and the server raises it further to its own
//     minimum (ceil(1.5 × election timeout): 2 s with etcd's defaults).
//     Lease.Deadline uses the TTL the server granted.
//   - A lease is kept alive by the process, not by the work: a holder that is
//     slow but running keeps its lock as long as it likes. A holder that is
//     paused for longer than the TTL (a GC pause, SIGSTOP) loses the lock
//     without knowing; when it resumes it still believes it holds it, and
//     only its Release reports strategies.ErrNotOwner, too late. The fencing
//     token is what protects the store in that case: the next holder's token
//     is larger, so a store that checks tokens refuses the stale writes.
//   - Lease.Deadline is the session lease's last renewal plus the TTL: it
//     moves on with every keepalive (about every TTL/3) while the process
//     runs, and stays put once they stop. A renewal is dated when its
//     response arrives, so the estimate is late by a one-way network
//     latency: on loopback that is microseconds, far below the 500ms at
//     which etcd checks for expired leases.
//   - Acquire never hangs on a stopped cluster: every request other than the
//     wait itself is bounded by DefaultOpTimeout, and a waiting Acquire gives
//     up once the client has had no connection for DefaultDownAfter. A
//     member that keeps its connections open but stops answering (a SIGSTOP,
//     a black-holing proxy) is noticed later, when the session's keepalives
//     lapse (about one TTL) and a new lease cannot be granted.
package etcdlock
