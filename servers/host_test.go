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

// A Postgres started with Options.Host listens there, beside 127.0.0.1,
// and its DSN names Host.
func TestPostgresOnHost(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := Start(ctx, Needs{Postgres: true}, Options{Host: "127.0.0.2"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	dsn := c.Postgres.DSN
	if !strings.Contains(dsn, "@127.0.0.2:") {
		t.Fatalf("DSN %s; want it on 127.0.0.2", Redact(dsn))
	}
	loopback := strings.Replace(dsn, "@127.0.0.2:", "@127.0.0.1:", 1)
	for _, d := range []string{dsn, loopback} {
		if err := pingPostgres(ctx, d); err != nil {
			t.Errorf("ping %s: %v", Redact(d), err)
		}
	}
}

// hostSubnet finds the network of the interface holding an address.
func TestHostSubnet(t *testing.T) {
	// 127.0.0.2 is on lo's 127.0.0.0/8.
	if n, err := hostSubnet("127.0.0.2"); err != nil || n.String() != "127.0.0.0/8" {
		t.Errorf("hostSubnet(127.0.0.2) = %v, %v; want 127.0.0.0/8", n, err)
	}
	// An address of no interface here (240/4 is reserved), and no
	// address at all.
	for _, h := range []string{"240.0.0.77", "db.example"} {
		if n, err := hostSubnet(h); err == nil {
			t.Errorf("hostSubnet(%s) = %v; want an error", h, n)
		}
	}
}
