package redisutil

import (
	"context"
	"testing"
	"time"

	"github.com/lockbench/lockbench/servers"
)

func TestScratchFailover(t *testing.T) {
	ctx := context.Background()
	c, err := servers.Start(ctx, servers.Needs{Redis: 1}, servers.Options{RedisTopology: servers.TopologySentinel})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	ep := c.Endpoints()
	cl, err := DialFailover(ctx, ep.RedisMaster, ep.RedisSentinels, "")
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for i := 0; i < 20; i++ {
		cl.Set(ctx, "x", i, 0)
	}
	c.Redis[0].Kill()
	start := time.Now()
	for time.Since(start) < 8*time.Second {
		err := cl.Set(ctx, "x", 1, 0).Err()
		a, _ := servers.PrimaryAddr(ctx, ep.RedisSentinels, ep.RedisMaster)
		t.Logf("%v: %v (sentinel says %s)", time.Since(start).Round(time.Millisecond), err, a)
		time.Sleep(300 * time.Millisecond)
	}
}
