package redislock_test

import (
	"context"
	"errors"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockbench/lockbench/servers"
	"github.com/lockbench/lockbench/strategies"
	"github.com/lockbench/lockbench/strategies/redislock"
	"github.com/lockbench/lockbench/strategies/redisutil"
)

// The mapping of redislock's answers onto lockbench's errors, against one
// real Redis node.
func TestRedisLock(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Redis server; run without -short")
	}
	ctx := context.Background()
	sctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	cl, err := servers.Start(sctx, servers.Needs{Redis: 1}, servers.Options{})
	if err != nil {
		t.Fatalf("start Redis: %v", err)
	}
	defer cl.Stop()
	node := cl.Redis[0]
	const ttl = 2 * time.Second
	s, err := redislock.New(ctx, strategies.Config{RedisAddrs: []string{node.Addr}, TTL: ttl})
	if err != nil {
		t.Fatalf("New: got %v; want a strategy", err)
	}
	defer s.Close()
	c := redis.NewClient(&redis.Options{Addr: node.Addr})
	defer c.Close()

	for _, tc := range []struct {
		name string
		// meddle does to the lock's key, between Acquire and Release, what
		// another holder or the TTL would.
		meddle func(rkey string) error
		want   error
	}{
		// Untouched: released.
		{"held", func(string) error { return nil }, nil},
		// The key expired (ErrLockNotHeld): not ours.
		{"expired", func(rkey string) error { return c.Del(ctx, rkey).Err() }, strategies.ErrNotOwner},
		// Someone else holds it now (ErrLockNotHeld): not ours, and theirs
		// stays.
		{"taken", func(rkey string) error { return c.Set(ctx, rkey, "someone-else", ttl).Err() }, strategies.ErrNotOwner},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key, rkey := "release-"+tc.name, redisutil.LockKey("release-"+tc.name)
			start := time.Now()
			l, err := s.Acquire(ctx, key)
			if err != nil {
				t.Fatalf("Acquire: got %v; want a lease", err)
			}
			if dl := l.Deadline(); dl.Before(start.Add(ttl)) || dl.After(time.Now().Add(ttl)) {
				t.Errorf("Deadline: got %v after the call; want the call's start + TTL %v", dl.Sub(start), ttl)
			}
			// A second attempt finds it held (ErrNotObtained).
			if _, err := s.Acquire(ctx, key); !errors.Is(err, strategies.ErrNotAcquired) {
				t.Errorf("Acquire while held: got %v; want ErrNotAcquired", err)
			}
			if err := tc.meddle(rkey); err != nil {
				t.Fatal(err)
			}
			if err := l.Release(ctx); !errors.Is(err, tc.want) || (tc.want == nil && err != nil) {
				t.Errorf("Release: got %v; want %v", err, tc.want)
			}
			if tc.name == "taken" && c.Get(ctx, rkey).Val() != "someone-else" {
				t.Errorf("after Release: the other holder's key is gone; want it kept")
			}
		})
	}

	// A node that does not answer (SIGSTOPped, as a paused or partitioned
	// server) is unavailable, not "held": the library returns go-redis'
	// timeout and redisutil.Classify names it.
	t.Run("stopped-node", func(t *testing.T) {
		l, err := s.Acquire(ctx, "stopped")
		if err != nil {
			t.Fatalf("Acquire: got %v; want a lease", err)
		}
		if err := syscall.Kill(node.Pid(), syscall.SIGSTOP); err != nil {
			t.Fatalf("SIGSTOP node: %v", err)
		}
		defer syscall.Kill(node.Pid(), syscall.SIGCONT)
		if _, err := s.Acquire(ctx, "stopped-2"); !errors.Is(err, strategies.ErrUnavailable) {
			t.Errorf("Acquire with the node stopped: got %v; want ErrUnavailable", err)
		}
		if err := l.Release(ctx); !errors.Is(err, strategies.ErrUnavailable) {
			t.Errorf("Release with the node stopped: got %v; want ErrUnavailable", err)
		}
	})
}
