// Package zklock is the "zookeeper" strategy: ZooKeeper's lock recipe on
// one session per instance, whose timeout is the strategy's TTL, with the
// go-zookeeper/zk client's primitives (Create, Children, GetW, Delete); not
// that client's own Lock, which takes no context and exposes no token.
//
// Acquire blocks (the strategy is a strategies.Blocker). Each Acquire
// creates an ephemeral sequential znode
//
//	/lockbench/locks/KEY/lock-GUID-NNNNNNNNNN
//
// where KEY is the path-escaped lock key, GUID is random for each create and
// NNNNNNNNNN is the sequence number ZooKeeper appends. The znode with the
// lowest number holds the lock; every other waits for the deletion of the
// one just below it, then lists the queue again. The fencing token is the
// holder's sequence number plus one: strictly increasing across successive
// holders of a key (the argument is at newLease).
//
// # Sessions
//
// The session is the lease: the client keeps it alive with pings while the
// process runs, and when they stop (a paused or dead process, an
// unreachable ensemble) the server expires it after the session timeout and
// deletes its ephemeral znodes, so the next waiter gets the lock. The
// client opens a new session by itself after an expiry; a waiter whose
// znode went with the old session creates a new one. Close cuts the
// connection without ending the session, so locks still held expire by
// their timeout, as the strategies package promises; zk.Conn's own Close
// would release them at once.
//
// # Defaults
//
// The session timeout asked for is Config.TTL (2s by default). The server
// raises it to at least 2 × tickTime and cuts it to its maximum: with the
// servers package's settings (tickTime 100ms, minimum 200ms, maximum 10
// minutes), which TickTime, MinSessionTimeout and MaxSessionTimeout assume,
// a TTL of 500ms is granted as is. Requests other than the wait are bounded
// by DefaultOpTimeout (2s). While the client has no session (it
// reconnects by itself) requests wait for one; after DefaultDownAfter (4s)
// without one they fail and waiters give up, with
// strategies.ErrUnavailable. New waits DefaultConnectTimeout (2s) for a
// session. The client waits for the answer to a connect request for the
// session timeout divided by the number of servers, as ZooKeeper's Java
// client does, then dials again.
//
// # Reconnecting
//
// Two of zk.Conn's own reconnection habits would cost the benchmark time
// that is the client's, not ZooKeeper's, so the strategy replaces them.
//
// zk.Conn alone waits ten times two thirds of the session timeout for the
// answer to a connect request. A server that has accepted the connection and
// will never answer turns that into a client with no session for that long:
// ZooKeeper 3.8.0 does that to a connection that arrives between binding its
// port and loading its data (it fails to close it). The strategy's bound
// (the session timeout divided by the number of servers) means the client
// has tried every server before the session can expire.
//
// zk's own HostProvider, after any lost connection to a lone server, makes
// the client wait a second before it dials again (it counts a round of
// servers tried without a session as a failure), and once more after an
// expired session: a blip, a restart or a partition that heals would cost a
// second or two. The strategy's hosts waits only after a round of servers
// that all refused the connection, or two rounds without a session (servers
// that accept and hang up).
//
// # Caveats
//
//   - A lease is kept alive by the process, not by the work, as with etcd:
//     a holder that is slow but running keeps its lock as long as it likes;
//     one paused for longer than the session timeout loses it without
//     knowing, and only its Release reports strategies.ErrNotOwner, too
//     late. The fencing token protects the store then.
//   - Lease.Deadline is the send time of the latest request the server
//     answered in the session, plus the granted timeout: a lower bound on
//     when the server may expire the session. It moves on while the process
//     runs (the strategy asks the server something every third of the
//     timeout) and stays put when it stops. The server expires sessions on
//     its ticks, so a lock outlives its holder by up to one tick more than
//     the timeout (LeaseTTL). A server with a longer tick than TickTime
//     grants other timeouts than SessionTimeout computes.
//   - Each key's parent znode is persistent and stays after its last lock
//     is released: it counts the key's sequence numbers, so deleting it
//     would hand out old tokens again. A run that locks a million distinct
//     keys leaves a million znodes in the server's memory; the servers
//     lockbench starts are new for each run. The sequence is a 32-bit
//     counter of the parent's child changes (two per lock: create and
//     delete), so a key wraps after about a billion locks.
//   - A create or delete whose answer is lost (a dropped connection, no
//     answer in time, a cancelled context) is settled in the background: the
//     strategy deletes the znode once the request is answered or, for a
//     create, finds it by its GUID and deletes it; until then the znode
//     blocks the key, for at most the session timeout if the client does
//     not reconnect.
//   - An ensemble member that keeps connections open but stops answering
//     (SIGSTOP, a black-holing proxy) is noticed when the client's pings go
//     unanswered, after two thirds of the session timeout.
package zklock
