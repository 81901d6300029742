package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockbench/lockbench/servers"
	"github.com/lockbench/lockbench/strategies"
	"github.com/lockbench/lockbench/strategies/redisutil"
	"github.com/lockbench/lockbench/strategies/redlock"
)

// startNodes starts n Redis nodes for the test and stops them at its end.
func startNodes(t *testing.T, n int) *servers.Cluster {
	t.Helper()
	if testing.Short() {
		t.Skip("starts Redis servers; run without -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := servers.Start(ctx, servers.Needs{Redis: n}, servers.Options{})
	if err != nil {
		t.Fatalf("start Redis: %v", err)
	}
	t.Cleanup(func() { _ = cl.Stop() })
	return cl
}

func open(t *testing.T, cl *servers.Cluster, ttl time.Duration) *redlock.Redlock {
	t.Helper()
	r, err := redlock.New(context.Background(), strategies.Config{RedisAddrs: cl.Endpoints().RedisAddrs, TTL: ttl})
	if err != nil {
		t.Fatalf("New: got %v; want a strategy", err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return r
}

func TestRedlock(t *testing.T) {
	cl := startNodes(t, redlock.DefaultNodes)
	const ttl = 10 * time.Second
	nodeTimeout := min(redlock.DefaultNodeTimeout, ttl/10)
	drift := time.Duration(float64(ttl)*redlock.DriftFactor) + redlock.DriftConstant

	// The deadline allows for clock drift and counts from before the round.
	t.Run("deadline", func(t *testing.T) {
		r := open(t, cl, ttl)
		l, err := r.Acquire(context.Background(), "deadline")
		after := time.Now()
		if err != nil {
			t.Fatalf("Acquire: got %v; want a lease", err)
		}
		defer l.Release(context.Background())
		if dl, limit := l.Deadline(), after.Add(ttl-drift); dl.After(limit) || !dl.After(after) {
			t.Errorf("Deadline: got %v after Acquire returned; want in (0, ttl−drift = %v]", dl.Sub(after), ttl-drift)
		}
	})

	// Nodes are asked in parallel: two nodes that never answer (SIGSTOPped)
	// cost one per-node timeout, not two, and a quorum still grants.
	t.Run("parallel", func(t *testing.T) {
		r := open(t, cl, ttl)
		for _, n := range cl.Redis[:2] {
			if err := syscall.Kill(n.Pid(), syscall.SIGSTOP); err != nil {
				t.Fatalf("SIGSTOP node: %v", err)
			}
			defer syscall.Kill(n.Pid(), syscall.SIGCONT)
		}
		// Asked one after the other they would cost two timeouts every
		// time; a busy machine can delay a parallel round as much, but not
		// five rounds in a row.
		var tooks []time.Duration
		for i := range 5 {
			start := time.Now()
			l, err := r.Acquire(context.Background(), fmt.Sprintf("parallel-%d", i))
			took := time.Since(start)
			if err != nil {
				t.Fatalf("Acquire with 2 of 5 nodes stopped: got %v; want a lease", err)
			}
			_ = l.Release(context.Background())
			if took < nodeTimeout {
				t.Fatalf("Acquire with 2 of 5 nodes stopped: took %v; want at least one per-node timeout (%v)", took, nodeTimeout)
			}
			if tooks = append(tooks, took); took < 2*nodeTimeout {
				t.Logf("took %v (rounds: %v)", took, tooks)
				return
			}
		}
		t.Errorf("Acquire with 2 of 5 nodes stopped: took %v in 5 rounds; want one per-node timeout (%v), not one per stopped node, in some round", tooks, nodeTimeout)
	})

	// Without a quorum the error names the failed nodes.
	t.Run("node-errors", func(t *testing.T) {
		r := open(t, cl, ttl)
		for i, n := range cl.Redis[:3] {
			if err := n.Kill(); err != nil {
				t.Fatalf("kill node %d: %v", i, err)
			}
			defer n.Start(context.Background())
		}
		_, err := r.Acquire(context.Background(), "node-errors")
		if !errors.Is(err, strategies.ErrUnavailable) {
			t.Fatalf("Acquire with 3 of 5 nodes down: got %v; want ErrUnavailable", err)
		}
		var ne *redlock.NodeError
		if !errors.As(err, &ne) || ne.Node > 2 {
			t.Errorf("errors.As(%v, *NodeError): got %v; want one of the killed nodes 0-2", err, ne)
		}
	})

	clients := make([]*redis.Client, len(cl.Redis))
	for i, n := range cl.Redis {
		clients[i] = redis.NewClient(&redis.Options{Addr: n.Addr})
		defer clients[i].Close()
	}
	// expire deletes key's lock on the first n nodes, as its TTL running out
	// there first would.
	expire := func(t *testing.T, key string, n int) {
		for _, c := range clients[:n] {
			if err := c.Del(context.Background(), redisutil.LockKey(key)).Err(); err != nil {
				t.Fatal(err)
			}
		}
	}
	// left counts the nodes that still have key's lock.
	left := func(key string) int {
		k := 0
		for _, c := range clients {
			if c.Exists(context.Background(), redisutil.LockKey(key)).Val() == 1 {
				k++
			}
		}
		return k
	}

	// A lease is released if a quorum of nodes still held it, and is not
	// ours any more (ErrNotOwner) when its keys were gone from a majority:
	// the rest, left by uneven expiry, are still deleted.
	t.Run("release-quorum", func(t *testing.T) {
		r := open(t, cl, ttl)
		ctx := context.Background()
		for _, tc := range []struct {
			gone int
			want error
		}{{0, nil}, {2, nil}, {3, strategies.ErrNotOwner}, {5, strategies.ErrNotOwner}} {
			key := fmt.Sprintf("release-quorum-%d", tc.gone)
			l, err := r.Acquire(ctx, key)
			if err != nil {
				t.Fatalf("Acquire: %v", err)
			}
			expire(t, key, tc.gone)
			if err := l.Release(ctx); !errors.Is(err, tc.want) || (tc.want == nil && err != nil) {
				t.Errorf("Release with the key gone from %d of 5 nodes: got %v; want %v", tc.gone, err, tc.want)
			}
			if k := left(key); k != 0 {
				t.Errorf("after Release with the key gone from %d of 5 nodes: still on %d nodes; want 0", tc.gone, k)
			}
		}
	})

	// A lease is extended if a quorum of nodes still held it, with its
	// Deadline moved on by the validity left after the round; when its keys
	// were gone from a majority, Extend reports ErrNotOwner, leaves the
	// Deadline alone and deletes the rest, as Release would.
	t.Run("extend-quorum", func(t *testing.T) {
		const short, longer = time.Second, 20 * time.Second
		r := open(t, cl, short)
		ctx := context.Background()
		extDrift := time.Duration(float64(longer)*redlock.DriftFactor) + redlock.DriftConstant
		for _, tc := range []struct {
			gone int
			want error
		}{{0, nil}, {2, nil}, {3, strategies.ErrNotOwner}, {5, strategies.ErrNotOwner}} {
			key := fmt.Sprintf("extend-quorum-%d", tc.gone)
			l, err := r.Acquire(ctx, key)
			if err != nil {
				t.Fatalf("Acquire: %v", err)
			}
			dl := l.Deadline()
			expire(t, key, tc.gone)
			before := time.Now()
			err = l.(strategies.Extender).Extend(ctx, longer)
			after := time.Now()
			if !errors.Is(err, tc.want) {
				t.Errorf("Extend with the key gone from %d of 5 nodes: got %v; want %v", tc.gone, err, tc.want)
			}
			got := l.Deadline()
			switch {
			case tc.want == nil && (got.Before(before.Add(longer-extDrift-after.Sub(before))) || got.After(after.Add(longer-extDrift))):
				t.Errorf("Deadline after Extend(%v): %v from the call, which took %v; want %v − drift %v − at most the call's duration", longer, got.Sub(before), after.Sub(before), longer, extDrift)
			case tc.want != nil && !got.Equal(dl):
				t.Errorf("Deadline after a refused Extend: moved by %v; want unchanged", got.Sub(dl))
			}
			want := len(clients) - tc.gone
			if tc.want != nil {
				want = 0
			}
			if k := left(key); k != want {
				t.Errorf("after Extend with the key gone from %d of 5 nodes: on %d nodes; want %d", tc.gone, k, want)
			}
			_ = l.Release(ctx)
		}
	})
}
