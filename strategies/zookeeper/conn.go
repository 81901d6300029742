package zklock

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"time"

	"github.com/go-zookeeper/zk"
)

// errOpTimeout reports a request that got no answer within the op timeout.
var errOpTimeout = errors.New("zklock: no answer in time")

// do runs op, one blocking call on z.conn, and waits for it until it
// returns, ctx is done or z.opTimeout has passed. zk.Conn's calls take no
// context and wait for as long as the client keeps the request (until it
// reconnects, or flushes the request after a round of failed dials), so op
// may still be running when do returns: done is closed once it has, and
// only then may the caller read what op wrote. A request is not sent at all
// when the client has had no session for z.downAfter: it could be sent
// much later, after the caller gave up.
//
// An answered request renews the session's record: the server touched the
// session when it received the request, which was after do began.
func (z *ZooKeeper) do(ctx context.Context, op func() error) (done <-chan struct{}, err error) {
	if d := z.downFor(); d >= z.downAfter {
		closed := make(chan struct{})
		close(closed)
		return closed, errNoSession
	}
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

// errNoSession is do's error when it sends nothing.
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
	return &sniffer{Conn: c, z: z, sent: time.Now()}, nil
}

// sniffer passes a connection through and decodes the head of the first
// frame the server sends on it, the ConnectResponse: int32 frame length,
// int32 protocol version, int32 timeout (ms), int64 session id, then the
// session password.
type sniffer struct {
	net.Conn
	z    *ZooKeeper
	sent time.Time // the connect request is written after this
	head [20]byte
	n    int
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

// quiet drops zk.Conn's log lines: the benchmark kills servers on purpose,
// and every refused dial would be printed between its own lines.
type quiet struct{}

func (quiet) Printf(string, ...any) {}
