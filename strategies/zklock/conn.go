package zklock

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
)

// errOpTimeout reports a request that got no answer within the op timeout.
var errOpTimeout = errors.New("zklock: no answer in time")

// do runs op, one blocking request on z.conn, and returns its error; read is
// do for a request that may be sent twice (a read). Without a session the
// request waits for one (the client reconnects by itself, and the session
// outlives the connection), failing with errNoSession after z.downAfter. A
// request the client could not send (zk.ErrNoServer) is sent again once there
// is a session; a read also when its answer was lost with the connection.
func (z *ZooKeeper) do(ctx context.Context, op func() error) (done <-chan struct{}, err error) {
	return z.call(ctx, op, false)
}

func (z *ZooKeeper) read(ctx context.Context, op func() error) (done <-chan struct{}, err error) {
	return z.call(ctx, op, true)
}

func (z *ZooKeeper) call(ctx context.Context, op func() error, read bool) (<-chan struct{}, error) {
	for {
		if err := z.up(ctx); err != nil {
			return settled, err
		}
		done, err := z.once(ctx, op)
		switch {
		case errors.Is(err, zk.ErrNoServer):
		case read && errors.Is(err, zk.ErrConnectionClosed):
		default:
			return done, err
		}
		// op has returned (the error is its own): send it again.
		select {
		case <-ctx.Done():
			return done, ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// settled is a closed channel: the done of a request never sent.
var settled = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// once sends op and waits for it until it returns, ctx is done or
// z.opTimeout has passed. zk.Conn's calls take no context and wait for as
// long as the client keeps the request (until it is answered, or the
// connection is lost), so op may still be running when once returns: done
// is closed once it has, and only then may the caller read what op wrote.
//
// An answered request renews the session's record: the server touched the
// session when it received the request, which was after once began.
func (z *ZooKeeper) once(ctx context.Context, op func() error) (done <-chan struct{}, err error) {
	ch := make(chan struct{})
	sid, sent := z.conn.SessionID(), time.Now()
	var opErr error
	go func() {
		defer close(ch)
		opErr = op()
		if answered(opErr) && z.conn.SessionID() == sid {
			if s := z.session(sid); s != nil {
				s.renew(sent)
			}
		}
	}()
	t := time.NewTimer(z.opTimeout)
	defer t.Stop()
	select {
	case <-ch:
		return ch, opErr
	case <-ctx.Done():
		return ch, ctx.Err()
	case <-t.C:
		return ch, errOpTimeout
	}
}

// up waits until the client has a session. It fails with errNoSession once
// the client has had none for z.downAfter.
func (z *ZooKeeper) up(ctx context.Context) error {
	if z.downFor() == 0 {
		return nil
	}
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		switch d := z.downFor(); {
		case d == 0:
			return nil
		case d >= z.downAfter:
			return fmt.Errorf("%w for %v", errNoSession, d.Round(time.Millisecond))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-z.closed:
			return errClosed
		case <-tick.C:
		}
	}
}

// errNoSession reports a request not sent because the client has had no
// session for too long.
var errNoSession = errors.New("zklock: no session with the ensemble")

// downFor is how long the client has been without a session (0 while it
// has one).
func (z *ZooKeeper) downFor() time.Duration {
	d := z.down.Load()
	if d == 0 {
		return 0
	}
	return time.Since(time.Unix(0, d))
}

// onEvent follows the client's session state. zk.Conn calls it from its
// own goroutine, which it must not block.
func (z *ZooKeeper) onEvent(ev zk.Event) {
	if ev.Type != zk.EventSession {
		return
	}
	if ev.State == zk.StateHasSession {
		z.down.Store(0)
		return
	}
	z.down.CompareAndSwap(0, time.Now().UnixNano())
}

// hello is what a connect response said: the session it opened or
// resumed (0: the server expired the one asked for), the timeout it
// granted, and a time before the server received the connect request.
type hello struct {
	sid     int64
	timeout time.Duration
	sent    time.Time
}

// dial is the client's Dialer. It keeps the connection so that Close can cut
// it, refuses to dial once Close has begun, and reads the session timeout
// the server granted from the connect response (zk.Conn keeps it to itself).
func (z *ZooKeeper) dial(network, addr string, timeout time.Duration) (net.Conn, error) {
	c, err := net.DialTimeout(network, addr, timeout)
	z.hosts.dialed(err == nil)
	if err != nil {
		return nil, err
	}
	z.sockMu.Lock()
	defer z.sockMu.Unlock()
	if z.closing {
		c.Close()
		return nil, errClosed
	}
	z.sock = c
	now := time.Now()
	return &sniffer{Conn: c, z: z, sent: now, answerBy: now.Add(z.handshake())}, nil
}

// handshake is how long the client waits for the answer to its connect
// request before it drops the connection and dials again: the session
// timeout asked for divided by the number of servers, as ZooKeeper's Java
// client does (see the package's Reconnecting).
func (z *ZooKeeper) handshake() time.Duration {
	return SessionTimeout(z.ttl) / time.Duration(len(z.servers))
}

// sniffer passes a connection through and decodes the head of the first
// frame the server sends on it, the ConnectResponse: int32 frame length,
// int32 protocol version, int32 timeout (ms), int64 session id, then the
// session password.
type sniffer struct {
	net.Conn
	z        *ZooKeeper
	sent     time.Time // the connect request is written after this
	answerBy time.Time // the latest read deadline until the head has come
	head     [20]byte
	n        int
}

// SetReadDeadline passes t on, but no later than answerBy until the
// connect response's head has come. zk.Conn sets its deadlines from the
// goroutine that reads, so n needs no lock.
func (s *sniffer) SetReadDeadline(t time.Time) error {
	if s.n < len(s.head) && (t.IsZero() || t.After(s.answerBy)) {
		t = s.answerBy
	}
	return s.Conn.SetReadDeadline(t)
}

func (s *sniffer) Read(p []byte) (int, error) {
	n, err := s.Conn.Read(p)
	if s.n < len(s.head) && n > 0 {
		s.n += copy(s.head[s.n:], p[:n])
		if s.n == len(s.head) {
			h := hello{
				sid:     int64(binary.BigEndian.Uint64(s.head[12:20])),
				timeout: time.Duration(int32(binary.BigEndian.Uint32(s.head[8:12]))) * time.Millisecond,
				sent:    s.sent,
			}
			s.z.sessMu.Lock()
			s.z.hello = h
			if cur := s.z.sess; cur != nil && cur.id == h.sid {
				cur.renew(h.sent) // a resumed session: the server touched it
			}
			s.z.sessMu.Unlock()
		}
	}
	return n, err
}

// hosts is the client's HostProvider. It has the client wait before it
// dials again only after a round of servers that all refused the connection,
// or two rounds without a session, so that it redials at once otherwise but
// never spins (see the package's Reconnecting).
type hosts struct {
	mu      sync.Mutex
	servers []string
	curr    int
	// refused counts dials refused in a row; tries counts servers handed
	// out since the last session or the last wait.
	refused, tries int
}

var _ zk.HostProvider = (*hosts)(nil)

// Init takes the servers as zk.Connect formats them (host:port). Names are
// resolved when dialled.
func (h *hosts) Init(servers []string) error {
	h.servers, h.curr = servers, -1
	return nil
}

// Len returns the number of servers.
func (h *hosts) Len() int { return len(h.servers) }

// Next returns the next server and whether the client should wait (and
// fail the requests it has not sent) before dialling it.
func (h *hosts) Next() (string, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := len(h.servers)
	h.curr = (h.curr + 1) % n
	h.tries++
	wait := h.refused >= n || h.tries > 2*n
	if wait {
		h.refused, h.tries = 0, 1
	}
	return h.servers[h.curr], wait
}

// Connected records a session.
func (h *hosts) Connected() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.refused, h.tries = 0, 0
}

// dialed records whether a dial connected.
func (h *hosts) dialed(ok bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if ok {
		h.refused = 0
	} else {
		h.refused++
	}
}

// quiet drops zk.Conn's log lines: the benchmark kills servers on purpose,
// and every refused dial would be printed between its own lines.
type quiet struct{}

func (quiet) Printf(string, ...any) {}
