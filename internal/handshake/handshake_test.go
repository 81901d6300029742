package handshake_test

import (
	"bufio"
	"net"
	"testing"
	"time"

	"github.com/lockbench/lockbench/internal/handshake"
	"github.com/lockbench/lockbench/internal/handshake/handshaketest"
)

// serveEcho serves a line protocol on a handshake.Listener until the
// test ends: the first line is the hello (then Done), every later line is
// echoed.
func serveEcho(t *testing.T, timeout time.Duration, maxPending int) (*handshake.Listener, string) {
	t.Helper()
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := handshake.NewListener(raw, timeout, maxPending)
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				if _, err := br.ReadString('\n'); err != nil {
					return
				}
				if !handshake.Done(c) {
					return
				}
				for {
					line, err := br.ReadString('\n')
					if err != nil {
						return
					}
					if _, err := c.Write([]byte(line)); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln, raw.Addr().String()
}

// hello says hello on a new connection, and returns it.
func hello(t *testing.T, addr string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if _, err := c.Write([]byte("hello\n")); err != nil {
		t.Fatal(err)
	}
	return c, bufio.NewReader(c)
}

// roundTrip sends a line on c and checks it comes back.
func roundTrip(t *testing.T, c net.Conn, br *bufio.Reader) {
	t.Helper()
	_ = c.SetDeadline(time.Now().Add(handshaketest.Margin))
	if _, err := c.Write([]byte("ping\n")); err != nil {
		t.Fatal(err)
	}
	if got, err := br.ReadString('\n'); err != nil || got != "ping\n" {
		t.Fatalf("echo: got %q, %v; want \"ping\\n\"", got, err)
	}
}

// Silent connections are closed after the timeout, not before; one that
// said hello stays open past it.
func TestTimeout(t *testing.T) {
	const timeout = 500 * time.Millisecond
	ln, addr := serveEcho(t, timeout, 0)
	c, br := hello(t, addr)
	roundTrip(t, c, br)
	idle := handshaketest.OpenIdle(t, addr, 50)
	handshaketest.CheckClosedOnTime(t, idle, timeout)
	roundTrip(t, c, br)
	if n := ln.Pending(); n != 0 {
		t.Errorf("pending after every silent one closed: got %d; want 0", n)
	}
}

// Beyond the bound the oldest pending connections are closed at once, a
// new client gets in, and the pending count stays at the bound.
func TestEvictOldest(t *testing.T) {
	const (
		timeout = 30 * time.Second
		bound   = 8
		extra   = 5
	)
	ln, addr := serveEcho(t, timeout, bound)
	idle := handshaketest.OpenIdle(t, addr, bound+extra)
	// The oldest extra are gone long before any timeout.
	deadline := time.Now().Add(handshaketest.Margin)
	for i, c := range idle[:extra] {
		if _, ok := c.ClosedAfter(time.Until(deadline)); !ok {
			t.Errorf("idle connection %d (of the %d oldest): still open; want closed to make room", i, extra)
		}
	}
	for i, c := range idle[extra:] {
		if _, ok := c.ClosedAfter(0); ok {
			t.Errorf("idle connection %d (of the %d newest): closed; want open until its timeout", extra+i, bound)
		}
	}
	// The client's connection made room too (one more evicted), and is
	// pending no more.
	c, br := hello(t, addr)
	roundTrip(t, c, br)
	if n := ln.Pending(); n != bound-1 {
		t.Errorf("pending: got %d; want %d, the bound less the client", n, bound-1)
	}
}

// Done says false for a connection the listener already closed, and
// true, once more, for one whose handshake was done.
func TestDoneAfterClose(t *testing.T) {
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := handshake.NewListener(raw, 100*time.Millisecond, 1)
	defer ln.Close()
	accept := func() net.Conn {
		c, err := net.Dial("tcp", raw.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		s, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	first := accept()
	second := accept() // evicts first
	if handshake.Done(first) {
		t.Error("Done(evicted): got true; want false")
	}
	if !handshake.Done(second) || !handshake.Done(second) {
		t.Error("Done(accepted), twice: got false; want true")
	}
	if _, ok := handshake.Unwrap(second).(*net.TCPConn); !ok {
		t.Errorf("Unwrap: got %T; want *net.TCPConn", handshake.Unwrap(second))
	}
	third := accept()
	time.Sleep(300 * time.Millisecond) // past its timeout
	if handshake.Done(third) {
		t.Error("Done(timed out): got true; want false")
	}
}
