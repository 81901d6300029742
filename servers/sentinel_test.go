package servers

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lockbench/lockbench/strategies"
)

// failoverWait bounds a Sentinel failover in the tests: down-after (500ms),
// a vote, the promotion, on a loaded machine; and once more, should the
// first vote split (a Sentinel retries after twice the failover timeout).
const failoverWait = 30 * time.Second

// The sentinel topology: one primary, two replicas in sync, three
// Sentinels that know them all; reached through the Sentinels only (no
// Redis address to use as a master), and what up prints. Killing the
// primary gets a replica promoted; the old primary comes back as a replica
// of the new one.
func TestSentinelTopology(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Redis nodes and Sentinels; run without -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := Start(ctx, Needs{Redis: 1}, Options{RedisTopology: TopologySentinel})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	if len(c.Redis) != 1+SentinelReplicas || len(c.Sentinels) != SentinelCount {
		t.Fatalf("%d Redis nodes, %d Sentinels; want %d and %d", len(c.Redis), len(c.Sentinels), 1+SentinelReplicas, SentinelCount)
	}
	ep := c.Endpoints()
	if len(ep.RedisAddrs) != 0 || len(ep.RedisSentinels) != SentinelCount || ep.RedisMaster != strategies.DefaultRedisMaster {
		t.Errorf("endpoints: addrs %v, sentinels %v, master %q; want no addrs, %d Sentinels, master %q",
			ep.RedisAddrs, ep.RedisSentinels, ep.RedisMaster, SentinelCount, strategies.DefaultRedisMaster)
	}
	env := strings.Join(ep.Env(), "\n")
	if !strings.Contains(env, EnvRedisSentinels+"="+strings.Join(ep.RedisSentinels, ",")) || strings.Contains(env, EnvRedisAddrs) {
		t.Errorf("Env():\n%s\nwant %s with the Sentinels and no %s", env, EnvRedisSentinels, EnvRedisAddrs)
	}

	// Single-node strategies get the group; redlock is not applicable.
	target, err := TargetFor(strategies.Need{Backend: strategies.BackendRedis, Nodes: 1}, ep, c)
	if err != nil {
		t.Fatal(err)
	}
	if !target.Replicated() || !target.Local() || target.Len() != 1+SentinelReplicas {
		t.Errorf("target: replicated %v, local %v, len %d; want true, true, %d", target.Replicated(), target.Local(), target.Len(), 1+SentinelReplicas)
	}
	if _, err := target.Reroute(target.Config, 0, "127.0.0.1:1"); !errors.Is(err, ErrReplicated) {
		t.Errorf("Reroute: got %v; want ErrReplicated", err)
	}
	if _, err := TargetFor(strategies.Need{Backend: strategies.BackendRedis, Nodes: 5}, ep, c); !errors.Is(err, ErrNeedsMasters) {
		t.Errorf("TargetFor(redis ×5): got %v; want ErrNeedsMasters", err)
	}

	old, replicas, err := target.Roles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if old.Addr != c.Redis[0].Addr || len(replicas) != SentinelReplicas {
		t.Fatalf("roles: primary %s, %d others; want %s and %d", old.Addr, len(replicas), c.Redis[0].Addr, SentinelReplicas)
	}
	if n, _ := target.Node(0); n != old.Node {
		t.Errorf("Node(0) = %v; want the primary %v", n, old.Node)
	}
	began := time.Now()
	if err := old.Node.Kill(); err != nil {
		t.Fatal(err)
	}
	var now Member
	for {
		p, _, err := target.Roles(ctx)
		if err == nil && p.Addr != old.Addr {
			now = p
			break
		}
		if time.Since(began) > failoverWait {
			t.Fatalf("no replica promoted %v after the primary was killed (last: %v, %v)", failoverWait, p.Addr, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("%s promoted %v after the primary was killed", now.Addr, time.Since(began).Round(time.Millisecond))
	if err := old.Node.Start(ctx); err != nil {
		t.Fatal(err)
	}
	info, err := redisInfo(ctx, old.Addr, "replication")
	if err != nil {
		t.Fatal(err)
	}
	if info["role"] != "slave" || info["master_port"] != now.Addr[strings.LastIndex(now.Addr, ":")+1:] {
		t.Errorf("the old primary restarted as role %q of port %q; want a replica of %s", info["role"], info["master_port"], now.Addr)
	}
}
