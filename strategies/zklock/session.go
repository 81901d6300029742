package zklock

import (
	"context"
	"sync/atomic"
	"time"
)

// session is what the strategy knows of one ZooKeeper session. The client
// replaces an expired session with a new one by itself; the leases taken
// in the old one keep its record, which then stops being renewed.
type session struct {
	id int64
	// timeout is the session timeout the server granted.
	timeout time.Duration
	// renewed is a time (Unix nanoseconds) before the server last heard
	// from the client in this session: when the latest answered request, or
	// the connect request, was sent. The server expires a session one
	// timeout after it last heard from the client (at its next tick after
	// that), so never before renewed + timeout.
	renewed atomic.Int64
}

// renew records that the server heard from the client after t.
func (s *session) renew(t time.Time) {
	for {
		old := s.renewed.Load()
		if t.UnixNano() <= old || s.renewed.CompareAndSwap(old, t.UnixNano()) {
			return
		}
	}
}

// expiry is the earliest time the server may expire the session, as far as
// the client has heard from it.
func (s *session) expiry() time.Time {
	return time.Unix(0, s.renewed.Load()).Add(s.timeout)
}

// session returns the record of the session id, creating it when id is the
// client's new session; nil for 0 (no session).
func (z *ZooKeeper) session(id int64) *session {
	if id == 0 {
		return nil
	}
	z.sessMu.Lock()
	defer z.sessMu.Unlock()
	if z.sess != nil && z.sess.id == id {
		return z.sess
	}
	s := &session{id: id, timeout: SessionTimeout(z.ttl)}
	if h := z.hello; h.sid == id {
		s.timeout = h.timeout
		s.renewed.Store(h.sent.UnixNano())
	} // else not renewed yet: an expiry in the past until the first answer
	z.sess = s
	return s
}

// keepalive asks the server something every third of the session timeout,
// so that the current session's record, and with it the Deadline of every
// lease held in it, moves on while the client is connected. (zk.Conn's own
// pings keep the session alive at the same rate, but their answers cannot
// be seen from outside it.) One request at a time: with the ensemble
// stopped, a request may be held for seconds.
func (z *ZooKeeper) keepalive() {
	for {
		interval := SessionTimeout(z.ttl) / 3
		if s := z.session(z.conn.SessionID()); s != nil && s.timeout > 0 {
			interval = s.timeout / 3
		}
		t := time.NewTimer(interval)
		select {
		case <-z.closed:
			t.Stop()
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), z.opTimeout)
		done, _ := z.read(ctx, func() error {
			_, _, err := z.conn.Exists("/")
			return err
		})
		cancel()
		select {
		case <-z.closed:
			return
		case <-done:
		}
	}
}
