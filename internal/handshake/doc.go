// Package handshake bounds what a listener spends on connections that
// have not yet said who they are: each accepted connection is pending
// until the protocol on top calls Done (the agent's and the store's hello
// read and checked, an HTTP request's headers read), and a pending
// connection is closed when it has been pending for the listener's
// timeout (Timeout by default) or when the listener holds more pending
// connections than its bound (MaxPending) and it is the oldest.
//
// Why the oldest is closed rather than the newest refused, or the accept
// queue stopped (golang.org/x/net/netutil.LimitListener's way): a real
// client completes its handshake within a round trip of connecting, so
// the oldest pending connection is the one least likely to be a client
// still on its way, and a new connection always gets in. Refusing the
// newest, or not accepting, would let a few hundred silent connections,
// refreshed as they time out, keep every real client out. The cost is
// that a client whose handshake takes longer than it takes a flood to
// open MaxPending connections is cut off: a flood that fast is a denial
// of service no bound on pending connections prevents.
//
// After Done a connection is the protocol's: it may be idle for as long
// as the protocol allows (an agent's session, an instance's store link,
// a keep-alive HTTP connection between scrapes).
//
// Caveats: the timeout is enforced by closing the connection from a
// timer, not by a deadline, so the protocol's own deadlines (an HTTP
// server's) stay the protocol's; a protocol that reads its handshake
// without a deadline of its own sees the read fail with the connection
// closed.
package handshake
