package agent

import (
	"context"
	"encoding/binary"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/lockbench/lockbench/internal/handshake/handshaketest"
	"github.com/lockbench/lockbench/internal/syncbuf"
)

// The agent's handshake bounds (Serve, HandshakeTimeout, MaxPending) on
// real loopback listeners, each test with its own agent: the pending
// bound is per listener.

// helloBytes is the hello a coordinator sends on a control connection.
func helloBytes(t *testing.T, token, version string) []byte {
	t.Helper()
	var b strings.Builder
	if err := writeHello(&b, hello{Protocol: Protocol, Kind: kindControl, Token: token, Version: version}); err != nil {
		t.Fatal(err)
	}
	return []byte(b.String())
}

// Hundreds of connections that never send a byte are closed once
// HandshakeTimeout has passed, and not before, with one line each in the
// agent's log; so are silent ones to an agent with TLS, which never
// start their TLS handshake.
func TestAgentIdleConnectionsClosed(t *testing.T) {
	t.Parallel()
	t.Run("plain", func(t *testing.T) {
		t.Parallel()
		_, addr, log := startAgent(t)
		idle := handshaketest.OpenIdle(t, addr, 300)
		handshaketest.CheckClosedOnTime(t, idle, HandshakeTimeout)
		// The agent logs a close once its read has failed, which may be
		// after the client saw the connection end.
		count := func() int { return strings.Count(log.String(), "before its hello") }
		for deadline := time.Now().Add(handshaketest.Margin); count() < len(idle) && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond)
		}
		if n := count(); n != len(idle) {
			t.Errorf("agent log: %d lines saying \"before its hello\"; want %d, one per silent connection", n, len(idle))
		}
	})
	t.Run("tls", func(t *testing.T) {
		t.Parallel()
		_, server, _ := testCA(t, t.TempDir(), "idle")
		tc, err := server.ServerTLS()
		if err != nil {
			t.Fatal(err)
		}
		addr := startAgentWith(t, Config{Token: testToken, TLS: tc, Log: &syncbuf.Buffer{}})
		idle := handshaketest.OpenIdle(t, addr, 50)
		handshaketest.CheckClosedOnTime(t, idle, HandshakeTimeout)
	})
}

// startAgentWith serves an agent configured by cfg on a free loopback
// port until the test ends.
func startAgentWith(t *testing.T, cfg Config) string {
	t.Helper()
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = a.Serve(ctx, ln) }()
	t.Cleanup(func() { cancel(); <-done })
	return ln.Addr().String()
}

// A coordinator sending its hello one byte every 500 ms is cut off at
// HandshakeTimeout.
func TestAgentSlowWriterClosed(t *testing.T) {
	t.Parallel()
	_, addr, _ := startAgent(t)
	msg := helloBytes(t, testToken, "slow-writer-"+strings.Repeat("v", 20))
	handshaketest.CheckSlowWriterClosed(t, addr, msg, 500*time.Millisecond, HandshakeTimeout)
}

// Frames beyond the protocol's bounds, and strangers, are refused on
// sight.
func TestAgentOversizedFrameRefused(t *testing.T) {
	t.Parallel()
	_, addr, _ := startAgent(t)
	instanceHello := func() []byte {
		var b strings.Builder
		if err := writeHello(&b, hello{Protocol: Protocol, Kind: kindInstance, Token: testToken, Version: "test"}); err != nil {
			t.Fatal(err)
		}
		return []byte(b.String())
	}
	cases := []struct {
		name string
		msg  []byte
	}{
		// A token length of 65535 bytes, past maxField.
		{"oversized token", append([]byte(magic), Protocol, kindControl, 0xff, 0xff)},
		// A spawn request of 4 GB, past maxSpawn, after a good hello.
		{"oversized spawn", binary.LittleEndian.AppendUint32(instanceHello(), 0xffffffff)},
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
// closed at once to make room, a coordinator opens a session as usual,
// and a session opened before stays, past HandshakeTimeout.
func TestAgentPendingBoundKeepsCoordinators(t *testing.T) {
	t.Parallel()
	const extra = 64
	_, addr, _ := startAgent(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*handshaketest.Margin)
	defer cancel()
	before, err := Dial(ctx, addr, DialConfig{Token: testToken})
	if err != nil {
		t.Fatal(err)
	}
	defer before.Close()
	idle := handshaketest.OpenIdle(t, addr, MaxPending+extra)
	during, err := Dial(ctx, addr, DialConfig{Token: testToken})
	if err != nil {
		t.Fatalf("Dial with %d silent connections pending: %v", len(idle), err)
	}
	defer during.Close()
	handshaketest.CheckEvicted(t, idle, extra, HandshakeTimeout)
	// By now the first session is older than HandshakeTimeout.
	for _, c := range []*Conn{before, during} {
		select {
		case <-c.Lost():
			t.Fatalf("session lost: %v", c.Err())
		default:
		}
		if _, err := c.call(ctx, request{Op: opClock}); err != nil {
			t.Errorf("clock request on a session past the handshake timeout: %v", err)
		}
	}
}
