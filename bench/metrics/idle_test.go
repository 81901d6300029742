package metrics

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/lockbench/lockbench/internal/handshake/handshaketest"
)

// The metrics server's handshake bounds (HandshakeTimeout: a request's
// headers; MaxPending) on real loopback listeners, each test with its own
// server: the pending bound is per listener.

// listenIdle serves an exporter with one run on a free loopback port
// until the test ends.
func listenIdle(t *testing.T) *Server {
	t.Helper()
	e := New()
	e.Run(Labels{Strategy: "mutex", Scenario: "base", Fault: "none", Trial: "1"})
	s, err := Listen("127.0.0.1:0", e)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// scrapeRequest is a scrape's request, keeping the connection alive.
func scrapeRequest(addr string) string {
	return "GET " + Path + " HTTP/1.1\r\nHost: " + addr + "\r\nUser-Agent: lockbench-idle-test\r\nAccept: text/plain\r\n\r\n"
}

// scrapeOn sends a scrape on c and reads its answer, which must be 200
// with the run's metrics.
func scrapeOn(t *testing.T, c net.Conn, br *bufio.Reader, addr string) {
	t.Helper()
	_ = c.SetDeadline(time.Now().Add(handshaketest.Margin))
	if _, err := io.WriteString(c, scrapeRequest(addr)); err != nil {
		t.Fatalf("writing a scrape: %v", err)
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("reading a scrape: %v", err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || !strings.Contains(string(body), RunActive) {
		t.Fatalf("scrape: %s, %d bytes, %v; want 200 with %s", resp.Status, len(body), err, RunActive)
	}
}

// Hundreds of connections that never send a byte are closed once
// HandshakeTimeout has passed, and not before.
func TestMetricsIdleConnectionsClosed(t *testing.T) {
	t.Parallel()
	s := listenIdle(t)
	idle := handshaketest.OpenIdle(t, s.Addr(), 300)
	handshaketest.CheckClosedOnTime(t, idle, HandshakeTimeout)
}

// A scraper sending its request headers one byte every 500 ms is cut off
// at HandshakeTimeout.
func TestMetricsSlowWriterClosed(t *testing.T) {
	t.Parallel()
	s := listenIdle(t)
	handshaketest.CheckSlowWriterClosed(t, s.Addr(), []byte(scrapeRequest(s.Addr())), 500*time.Millisecond, HandshakeTimeout)
}

// Request headers past http.DefaultMaxHeaderBytes, and a frame of
// another protocol, are refused on sight.
func TestMetricsOversizedFrameRefused(t *testing.T) {
	t.Parallel()
	s := listenIdle(t)
	cases := []struct {
		name string
		msg  []byte
	}{
		// A 2 MB header, twice what the server reads.
		{"oversized headers", []byte("GET " + Path + " HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 2<<20) + "\r\n\r\n")},
		// Not HTTP: a store's hello with a 64 KB length prefix.
		{"garbage", []byte("LBS\x07\xff\xff\r\n\r\n")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			answer := handshaketest.CheckRefusedAtOnce(t, s.Addr(), c.msg, HandshakeTimeout)
			if len(answer) > 0 && !strings.HasPrefix(string(answer), "HTTP/1.1 4") {
				t.Errorf("answer %.40q; want a 4xx or nothing", answer)
			}
		})
	}
}

// A keep-alive connection idle between scrapes for longer than
// HandshakeTimeout stays open: its next scrape is answered on it.
func TestMetricsKeepAliveBetweenScrapes(t *testing.T) {
	t.Parallel()
	s := listenIdle(t)
	c, err := net.DialTimeout("tcp", s.Addr(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	scrapeOn(t, c, br, s.Addr())
	time.Sleep(HandshakeTimeout + time.Second)
	scrapeOn(t, c, br, s.Addr())
}

// With MaxPending+64 silent connections pending, the 64 oldest are
// closed at once to make room and a scrape is answered as usual.
func TestMetricsPendingBoundKeepsScrapers(t *testing.T) {
	t.Parallel()
	const extra = 64
	s := listenIdle(t)
	idle := handshaketest.OpenIdle(t, s.Addr(), MaxPending+extra)
	c, err := net.DialTimeout("tcp", s.Addr(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	scrapeOn(t, c, bufio.NewReader(c), s.Addr())
	handshaketest.CheckEvicted(t, idle, extra, HandshakeTimeout)
}
