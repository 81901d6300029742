package redisutil

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockbench/lockbench/strategies"
)

// Node is what a single-node lock (setnx, fencing) holds: a client for the
// first address of Config.RedisAddrs and the lock's settings.
type Node struct {
	Client *redis.Client
	Addr   string
	// TTL is Config.TTL truncated to whole milliseconds, PX's resolution.
	TTL   time.Duration
	Owner string
}

// DialNode connects to cfg.RedisAddrs[0], checks that it answers and loads
// scripts. name prefixes its errors ("setnx: …").
func DialNode(ctx context.Context, name string, cfg strategies.Config, scripts ...*redis.Script) (Node, error) {
	cfg = cfg.WithDefaults()
	if len(cfg.RedisAddrs) == 0 {
		return Node{}, errors.New(name + ": no Redis address in Config.RedisAddrs")
	}
	ttl := cfg.TTL.Truncate(time.Millisecond)
	if ttl <= 0 {
		return Node{}, fmt.Errorf("%s: TTL %v is below PX's 1ms resolution", name, cfg.TTL)
	}
	addr := cfg.RedisAddrs[0]
	c, err := Dial(ctx, addr, cfg.RedisPassword, scripts...)
	if err != nil {
		return Node{}, fmt.Errorf("%s: %w", name, err)
	}
	return Node{Client: c, Addr: addr, TTL: ttl, Owner: cfg.Owner}, nil
}
