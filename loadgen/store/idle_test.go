package store

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/lockbench/lockbench/internal/handshake/handshaketest"
)

// The served store's handshake bounds (ServeWith, HandshakeTimeout,
// MaxPending) on real loopback listeners, each test with its own server:
// the pending bound is per listener.

const idleToken = "idle-test-token-0123456789-abcdefghijklmnop"

// serveIdle serves a memory store presenting idleToken on a free loopback
// port until the test ends.
func serveIdle(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() { _ = ServeWith(ln, NewMemory(), ServeOptions{Token: idleToken}) }()
	return ln.Addr().String()
}

// storeHello is the opening a client sends: magic, version, token.
func storeHello(token string) []byte {
	b := append([]byte(protoMagic), protoVersion)
	b = le.AppendUint16(b, uint16(len(token)))
	return append(b, token...)
}

// answered fails t unless err is the empty store's answer to an Enter:
// the call crossed the connection and came back.
func answered(t *testing.T, err error) {
	t.Helper()
	if !errors.Is(err, errUnknownPayment) {
		t.Fatalf("Enter on an empty store: got %v; want its answer, %v", err, errUnknownPayment)
	}
}

// enterOnce dials addr and makes one call: a client at work.
func enterOnce(t *testing.T, addr string) *Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), handshaketest.Margin)
	defer cancel()
	c, err := DialToken(ctx, addr, idleToken)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	_, err = c.Enter(ctx, EnterReq{LockKey: "k", Payment: 1, Token: 1})
	answered(t, err)
	return c
}

// Hundreds of connections that never send a byte are closed once
// HandshakeTimeout has passed, and not before.
func TestStoreIdleConnectionsClosed(t *testing.T) {
	t.Parallel()
	addr := serveIdle(t)
	idle := handshaketest.OpenIdle(t, addr, 300)
	handshaketest.CheckClosedOnTime(t, idle, HandshakeTimeout)
}

// A client sending its hello one byte every 500 ms is cut off at
// HandshakeTimeout.
func TestStoreSlowWriterClosed(t *testing.T) {
	t.Parallel()
	addr := serveIdle(t)
	handshaketest.CheckSlowWriterClosed(t, addr, storeHello(idleToken), 500*time.Millisecond, HandshakeTimeout)
}

// A hello whose token length is beyond the protocol's bound (maxKey) is
// refused on sight, as a wrong magic is.
func TestStoreOversizedFrameRefused(t *testing.T) {
	t.Parallel()
	addr := serveIdle(t)
	cases := []struct {
		name string
		msg  []byte
	}{
		// A token length of 65535 bytes, far past maxKey.
		{"oversized token", append([]byte(protoMagic), protoVersion, 0xff, 0xff)},
		// An HTTP request instead of a hello.
		{"http", []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			handshaketest.CheckRefusedAtOnce(t, addr, c.msg, HandshakeTimeout)
		})
	}
}

// With MaxPending+64 silent connections pending, the 64 oldest are
// closed at once to make room, a client connects and calls as usual, and
// a client at work stays open, idle, past HandshakeTimeout.
func TestStorePendingBoundKeepsClients(t *testing.T) {
	t.Parallel()
	const extra = 64
	addr := serveIdle(t)
	working := enterOnce(t, addr)
	idle := handshaketest.OpenIdle(t, addr, MaxPending+extra)
	enterOnce(t, addr)
	handshaketest.CheckEvicted(t, idle, extra, HandshakeTimeout)
	// By now the working client has been idle past HandshakeTimeout.
	ctx, cancel := context.WithTimeout(context.Background(), handshaketest.Margin)
	defer cancel()
	_, err := working.Enter(ctx, EnterReq{LockKey: "k", Payment: 2, Token: 2})
	answered(t, err)
}
