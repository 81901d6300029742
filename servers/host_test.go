package servers

import (
	"context"
	"strings"
	"testing"
	"time"
)

// CheckHost takes loopback and private addresses only.
func TestCheckHost(t *testing.T) {
	cases := []struct {
		host string
		ok   bool
	}{
		// Loopback, any of it.
		{"127.0.0.1", true},
		{"127.0.0.3", true},
		{"::1", true},
		// Private: a veth pair's, a LAN's, a pod network's.
		{"10.203.0.1", true},
		{"192.168.1.20", true},
		{"172.16.4.4", true},
		// Public: refused.
		{"8.8.8.8", false},
		{"2001:4860:4860::8888", false},
		// Not an address.
		{"db.example", false},
	}
	for _, c := range cases {
		if err := CheckHost(c.host); (err == nil) != c.ok {
			t.Errorf("CheckHost(%q) = %v; want ok %v", c.host, err, c.ok)
		}
	}
}

// A Redis node started with Options.Host listens there, and its endpoint
// says so.
func TestRedisOnHost(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := Start(ctx, Needs{Redis: 1}, Options{Host: "127.0.0.2"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	addr := c.Redis[0].Addr
	if !strings.HasPrefix(addr, "127.0.0.2:") {
		t.Fatalf("Redis at %s; want 127.0.0.2", addr)
	}
	if err := pingAs(ctx, addr, nil); err != nil {
		t.Errorf("ping %s: %v", addr, err)
	}
	if _, err := Start(ctx, Needs{Redis: 1}, Options{Host: "8.8.8.8"}); err == nil {
		t.Errorf("Start on a public host: got no error; want one")
	}
}
