// Package handshaketest checks a real server's handshake bounds
// (internal/handshake) from the client side: silent connections, slow
// writers and the pending bound, measured per connection against the
// server's timeout with a generous margin, never a tight fixed time.
package handshaketest

import (
	"errors"
	"io"
	"net"
	"testing"
	"time"
)

// Margin is how late past its bound a close may come and still count:
// a loaded two-core machine under -race schedules timers late, never
// this late.
const Margin = 10 * time.Second

// Idle is a connection that sends nothing: when its dial began (the
// server cannot have accepted it sooner) and, once the server closed it,
// when.
type Idle struct {
	Conn   net.Conn
	Dialed time.Time
	closed chan time.Time
}

// OpenIdle dials n connections to addr (TCP) that send nothing, each
// watched for the server's close; the test's end closes them.
func OpenIdle(t testing.TB, addr string, n int) []*Idle {
	t.Helper()
	idle := make([]*Idle, 0, n)
	t.Cleanup(func() {
		for _, c := range idle {
			_ = c.Conn.Close()
		}
	})
	for range n {
		start := time.Now()
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatalf("dial idle connection %d of %d: %v", len(idle)+1, n, err)
		}
		ic := &Idle{Conn: c, Dialed: start, closed: make(chan time.Time, 1)}
		idle = append(idle, ic)
		go ic.watch()
	}
	return idle
}

// watch reads until the connection ends (anything the server says
// before closing is discarded) and notes when.
func (c *Idle) watch() {
	_, _ = io.Copy(io.Discard, c.Conn)
	c.closed <- time.Now()
}

// ClosedAfter waits up to within from now for the server to close c and
// says how long after its dial it did; false if it did not.
func (c *Idle) ClosedAfter(within time.Duration) (time.Duration, bool) {
	select {
	case at := <-c.closed:
		c.closed <- at
		return at.Sub(c.Dialed), true
	case <-time.After(within):
		return 0, false
	}
}

// CheckClosedOnTime fails t unless the server closed every one of idle
// no sooner than timeout after its dial and no later than timeout +
// Margin: closed for its silence, not before.
func CheckClosedOnTime(t testing.TB, idle []*Idle, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout + Margin)
	var early, open int
	var latest time.Duration
	for _, c := range idle {
		d, ok := c.ClosedAfter(time.Until(deadline))
		switch {
		case !ok:
			open++
		case d < timeout:
			early++
		default:
			latest = max(latest, d)
		}
	}
	if open > 0 || early > 0 {
		t.Errorf("%d silent connections: %d still open %s after their dial, %d closed sooner than %s; want every one closed after %s", len(idle), open, timeout+Margin, early, timeout, timeout)
	}
	t.Logf("%d silent connections closed, the last %s after its dial (handshake timeout %s)", len(idle)-open-early, latest.Round(time.Millisecond), timeout)
}

// CheckEvicted fails t unless the server closed at least n of idle
// sooner than timeout after their dial: made room for newer ones, since
// no timeout can have closed them yet. It says how many it closed so.
func CheckEvicted(t testing.TB, idle []*Idle, n int, timeout time.Duration) int {
	t.Helper()
	deadline := time.Now().Add(timeout)
	evicted := 0
	for _, c := range idle {
		if d, ok := c.ClosedAfter(max(time.Until(deadline), 0)); ok && d < timeout {
			evicted++
		}
	}
	if evicted < n {
		t.Errorf("%d connections beyond the pending bound: %d closed before the handshake timeout (%s); want at least %d", n, evicted, timeout, n)
	}
	return evicted
}

// SlowWrite sends msg on a new connection to addr one byte every every,
// until the server closes the connection or msg is sent. It says how
// many bytes went out and how long after the dial the server closed it
// (false when it had not within Margin after the last byte).
func SlowWrite(t testing.TB, addr string, msg []byte, every time.Duration) (sent int, closedAfter time.Duration, closed bool) {
	t.Helper()
	c := OpenIdle(t, addr, 1)[0]
	for sent < len(msg) {
		if _, err := c.Conn.Write(msg[sent : sent+1]); err != nil {
			break
		}
		sent++
		if d, ok := c.ClosedAfter(every); ok {
			return sent, d, true
		}
	}
	d, ok := c.ClosedAfter(Margin)
	return sent, d, ok
}

// CheckSlowWriterClosed fails t unless a writer of msg at one byte every
// every, too slow to finish within timeout, was cut off: closed after
// timeout, within Margin, before its last byte.
func CheckSlowWriterClosed(t testing.TB, addr string, msg []byte, every, timeout time.Duration) {
	t.Helper()
	if time.Duration(len(msg)-1)*every < timeout+Margin {
		t.Fatalf("a %d-byte message at one byte every %s would be sent within %s: make it longer", len(msg), every, timeout+Margin)
	}
	sent, d, closed := SlowWrite(t, addr, msg, every)
	switch {
	case !closed:
		t.Errorf("slow writer (one byte every %s): sent %d of %d bytes and still open; want it closed after %s", every, sent, len(msg), timeout)
	case sent == len(msg):
		t.Errorf("slow writer: sent all %d bytes before the close (%s after its dial); want it cut off after %s", len(msg), d, timeout)
	case d < timeout || d > timeout+Margin:
		t.Errorf("slow writer: closed %s after its dial, having sent %d of %d bytes; want after %s, within %s", d.Round(time.Millisecond), sent, len(msg), timeout, Margin)
	default:
		t.Logf("slow writer closed %s after its dial, %d of %d bytes sent", d.Round(time.Millisecond), sent, len(msg))
	}
}

// CheckRefusedAtOnce sends msg on a new connection to addr and fails t
// unless the server closes it well before timeout (within timeout/2): a
// frame it refuses on sight. It returns what the server answered.
func CheckRefusedAtOnce(t testing.TB, addr string, msg []byte, timeout time.Duration) []byte {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	_ = c.SetWriteDeadline(start.Add(timeout + Margin))
	done := make(chan []byte, 1)
	go func() {
		_ = c.SetReadDeadline(start.Add(timeout + Margin))
		b, _ := io.ReadAll(c)
		done <- b
	}()
	// The server may close while the frame is still being written: a
	// write error is its refusal too.
	if _, err := c.Write(msg); err != nil && !errors.Is(err, net.ErrClosed) {
		t.Logf("write cut short: %v", err)
	}
	b := <-done
	if d := time.Since(start); d > timeout/2 {
		t.Errorf("%d-byte frame: connection closed %s after it was sent; want at once (before %s)", len(msg), d.Round(time.Millisecond), timeout/2)
	}
	return b
}
