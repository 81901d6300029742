package handshake

import (
	"container/list"
	"net"
	"sync"
	"time"
)

// Timeout is how long a connection may take to complete its handshake
// before it is closed: 5 seconds, a hundred times a slow network's round
// trip and far less than the minutes a silent connection otherwise
// holds a socket.
const Timeout = 5 * time.Second

// MaxPending is how many connections a listener holds at once before
// their handshakes complete: 512. A run's clients connect in bursts of
// at most a few per instance (an agent's instances, a coordinator's
// store clients), far below it; beyond it the oldest pending connection
// is closed to make room (see the package comment for why).
const MaxPending = 512

// Listener is a net.Listener whose connections are pending until Done.
type Listener struct {
	net.Listener
	timeout time.Duration
	max     int

	mu      sync.Mutex
	pending list.List // of *Conn, oldest first
}

// NewListener wraps ln with a handshake timeout and a bound on pending
// connections; zero or less for either means the default (Timeout,
// MaxPending).
func NewListener(ln net.Listener, timeout time.Duration, maxPending int) *Listener {
	if timeout <= 0 {
		timeout = Timeout
	}
	if maxPending <= 0 {
		maxPending = MaxPending
	}
	return &Listener{Listener: ln, timeout: timeout, max: maxPending}
}

// Accept accepts a connection, pending until Done. When MaxPending
// connections are already pending, the oldest of them is closed.
func (l *Listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	pc := &Conn{Conn: c, l: l}
	l.mu.Lock()
	var evicted *Conn
	if l.pending.Len() >= l.max {
		evicted = l.pending.Front().Value.(*Conn)
		evicted.settle(dropped)
	}
	pc.elem = l.pending.PushBack(pc)
	// Armed under the lock, so that expire, which takes it, finds the
	// connection listed and its timer set.
	pc.timer = time.AfterFunc(l.timeout, pc.expire)
	l.mu.Unlock()
	if evicted != nil {
		// Not on the accepting goroutine: closing a TLS connection may
		// write.
		go evicted.Conn.Close()
	}
	return pc, nil
}

// Pending is how many connections are pending now.
func (l *Listener) Pending() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.pending.Len()
}

// Conn is a connection of a Listener.
type Conn struct {
	net.Conn
	l *Listener

	// Guarded by l.mu.
	state state
	elem  *list.Element // in l.pending while pending
	timer *time.Timer
}

// state is a Conn's handshake state.
type state int

const (
	pending state = iota // accepted, handshake not yet complete
	done                 // handshake complete (Done)
	dropped              // closed by the listener: timed out or evicted
	closed               // closed by its owner while pending
)

// NetConn is the connection Conn wraps.
func (c *Conn) NetConn() net.Conn { return c.Conn }

// expire closes c if it is still pending.
func (c *Conn) expire() {
	c.l.mu.Lock()
	was := c.settle(dropped)
	c.l.mu.Unlock()
	if was == pending {
		_ = c.Conn.Close()
	}
}

// settle moves c, if pending, to state to, off the pending list; it
// returns the state c was in. The caller holds c.l.mu.
func (c *Conn) settle(to state) state {
	was := c.state
	if was != pending {
		return was
	}
	c.l.pending.Remove(c.elem)
	c.elem = nil
	c.timer.Stop()
	c.state = to
	return was
}

// Close closes the connection, pending or not.
func (c *Conn) Close() error {
	c.l.mu.Lock()
	c.settle(closed)
	c.l.mu.Unlock()
	return c.Conn.Close()
}

// Done marks c's handshake complete: it is no longer pending, and stays
// open as long as its protocol keeps it. c is a connection a Listener
// accepted, or one wrapping it through a NetConn method (a *tls.Conn);
// for any other, Done does nothing and says true. It says false when the
// connection was already closed, for its timeout, to make room or by
// its owner.
func Done(c net.Conn) bool {
	for {
		switch v := c.(type) {
		case *Conn:
			v.l.mu.Lock()
			defer v.l.mu.Unlock()
			was := v.settle(done)
			return was == pending || was == done
		case interface{ NetConn() net.Conn }:
			c = v.NetConn()
		default:
			return true
		}
	}
}

// Unwrap is the connection under c's wrappers (a *tls.Conn, a Conn):
// the *net.TCPConn whose socket options a caller sets.
func Unwrap(c net.Conn) net.Conn {
	for {
		u, ok := c.(interface{ NetConn() net.Conn })
		if !ok {
			return c
		}
		c = u.NetConn()
	}
}
