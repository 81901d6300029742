package faults_test

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/rs/zerolog"

	"github.com/lockbench/lockbench/servers"
	"github.com/lockbench/lockbench/strategies"
	"github.com/lockbench/lockbench/strategies/redlock"
)

// cutOff returns the address of a toxiproxy proxy to upstream that refuses
// every connection: the node is unreachable for whoever uses the address.
func cutOff(t *testing.T, upstream string) string {
	t.Helper()
	srv := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
	p := toxiproxy.NewProxy(srv, "cut", "127.0.0.1:0", upstream)
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	addr := p.Listen
	p.Stop()
	// Nothing listens there now; make sure a dial is refused.
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c.Close()
		t.Fatalf("%s still accepts connections after the proxy stopped", addr)
	}
	return addr
}

// Redlock's safety rests on every node remembering the lock until it
// expires on a correct clock. Kleppmann's scenario, driven on the strategy
// itself with two clients:
//
//   - client A cannot reach nodes 3 and 4 and takes the lock on {0, 1, 2};
//   - node 2 forgets it: restarted without persistence, or its clock jumps
//     past the TTL;
//   - client B cannot reach nodes 0 and 1 and takes the same lock on
//     {2, 3, 4} — while A's lease is still valid by A's own reckoning.
//
// Without the fault B is refused: node 2 still holds A's lock.
func TestRedlockDoubleGrant(t *testing.T) {
	c := sharedServers(t)
	ttl := 5 * time.Second
	cases := []struct {
		name  string
		fault func(r *servers.Redis) error
		reset func(r *servers.Redis) error
		want  bool // B gets the lock too
	}{
		{"no fault", nil, nil, false},
		{"restart-node", func(r *servers.Redis) error {
			if err := r.Kill(); err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			return r.Start(ctx)
		}, nil, true},
		{"clock-jump", func(r *servers.Redis) error { return r.SetClockOffset(ttl + time.Second) },
			func(r *servers.Redis) error { return r.SetClockOffset(0) }, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			addrs := c.Endpoints().RedisAddrs
			key := "double-grant-" + tc.name
			aAddrs := []string{addrs[0], addrs[1], addrs[2], cutOff(t, addrs[3]), cutOff(t, addrs[4])}
			bAddrs := []string{cutOff(t, addrs[0]), cutOff(t, addrs[1]), addrs[2], addrs[3], addrs[4]}
			a, err := redlock.New(ctx, strategies.Config{TTL: ttl, Owner: "A", RedisAddrs: aAddrs})
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close()
			b, err := redlock.New(ctx, strategies.Config{TTL: ttl, Owner: "B", RedisAddrs: bAddrs})
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()

			la, err := a.Acquire(ctx, key)
			if err != nil {
				t.Fatalf("A: %v; want the lock on nodes 0, 1, 2", err)
			}
			defer la.Release(context.WithoutCancel(ctx))
			if tc.fault != nil {
				if err := tc.fault(c.Redis[2]); err != nil {
					t.Fatalf("fault on node 2: %v", err)
				}
			}
			if tc.reset != nil {
				defer func() {
					if err := tc.reset(c.Redis[2]); err != nil {
						t.Errorf("reset node 2: %v", err)
					}
				}()
			}
			lb, err := b.Acquire(ctx, key)
			now := time.Now()
			if !tc.want {
				if !errors.Is(err, strategies.ErrNotAcquired) {
					t.Errorf("B: %v; want ErrNotAcquired: node 2 still holds A's lock", err)
				}
				if lb != nil {
					lb.Release(ctx)
				}
				return
			}
			if err != nil {
				t.Fatalf("B: %v; want the lock on nodes 2, 3, 4", err)
			}
			defer lb.Release(context.WithoutCancel(ctx))
			if !la.Deadline().After(now) || !lb.Deadline().After(now) {
				t.Fatalf("deadlines A %v, B %v at %v; want both leases valid at once", la.Deadline(), lb.Deadline(), now)
			}
			t.Logf("A and B both hold %q: A valid for %v more, B for %v", key, la.Deadline().Sub(now).Round(time.Millisecond), lb.Deadline().Sub(now).Round(time.Millisecond))
		})
	}
}
