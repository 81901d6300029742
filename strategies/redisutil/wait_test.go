package redisutil

import (
	"context"
	"errors"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockbench/lockbench/servers"
	"github.com/lockbench/lockbench/strategies"
)

// WAIT on the sentinel topology: with the replicas answering, a lock
// taken with Wait 1 is acknowledged and kept; with both replicas stopped
// (SIGSTOP: connected, silent) WAIT times out, the lock is released again
// and Take reports ErrNotReplicated, which is ErrNotAcquired to a caller.
func TestTakeWaits(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a replicated Redis and Sentinels; run without -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := servers.Start(ctx, servers.Needs{Redis: 1}, servers.Options{RedisTopology: servers.TopologySentinel})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	ep := c.Endpoints()
	const waitTimeout = 200 * time.Millisecond
	n, err := DialNode(ctx, "test", strategies.Config{
		RedisSentinels: ep.RedisSentinels, RedisMaster: ep.RedisMaster,
		TTL: 10 * time.Second, RedisWait: 1, RedisWaitTimeout: waitTimeout,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Client.Close()
	set := func(key string) func(c redis.Cmdable) (bool, error) {
		return func(c redis.Cmdable) (bool, error) { return c.SetNX(ctx, LockKey(key), "v", n.TTL).Result() }
	}

	if err := n.Take(ctx, "acked", "v", set("acked")); err != nil {
		t.Fatalf("Take with the replicas up: got %v; want nil", err)
	}
	if got := n.Client.Exists(ctx, LockKey("acked")).Val(); got != 1 {
		t.Errorf("after an acknowledged Take: the lock exists %d times; want 1", got)
	}
	if err := n.Take(ctx, "acked", "w", set("acked")); !errors.Is(err, strategies.ErrNotAcquired) || errors.Is(err, ErrNotReplicated) {
		t.Errorf("Take of a held lock: got %v; want ErrNotAcquired, not ErrNotReplicated (a loser waits for nothing)", err)
	}

	target, err := servers.TargetFor(strategies.Need{Backend: strategies.BackendRedis, Nodes: 1}, ep, c)
	if err != nil {
		t.Fatal(err)
	}
	_, replicas, err := target.Roles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range replicas {
		pid := r.Node.(*servers.Redis).Pid()
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		defer syscall.Kill(pid, syscall.SIGCONT)
	}
	began := time.Now()
	err = n.Take(ctx, "unacked", "v", set("unacked"))
	took := time.Since(began)
	if !errors.Is(err, ErrNotReplicated) || !errors.Is(err, strategies.ErrNotAcquired) {
		t.Errorf("Take with the replicas stopped: got %v; want ErrNotReplicated (an ErrNotAcquired)", err)
	}
	if took < waitTimeout {
		t.Errorf("Take with the replicas stopped returned after %v; want WAIT's timeout %v first", took, waitTimeout)
	}
	if got := n.Client.Exists(ctx, LockKey("unacked")).Val(); got != 0 {
		t.Errorf("after an unacknowledged Take: the lock exists; want it released")
	}
}

// WAIT needs replicas: a Config asking for it on an independent master is
// refused at DialNode.
func TestWaitNeedsSentinels(t *testing.T) {
	_, err := DialNode(context.Background(), "test", strategies.Config{RedisAddrs: []string{"127.0.0.1:1"}, RedisWait: 1})
	if err == nil {
		t.Fatal("DialNode with RedisWait and no Sentinels: got nil; want an error")
	}
}
