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
// first address of Config.RedisAddrs, or for the primary the Sentinels of
// Config.RedisSentinels name, and the lock's settings.
type Node struct {
	Client *redis.Client
	// Addr names the node in errors: its host:port (EndpointName, never a
	// password), or PrimaryName.
	Addr string
	// TTL is Config.TTL truncated to whole milliseconds, PX's resolution.
	TTL   time.Duration
	Owner string
	// Wait is how many replicas must acknowledge a lock before Take
	// reports it taken (Config.RedisWait; 0: no WAIT), within WaitTimeout.
	Wait        int
	WaitTimeout time.Duration
}

// DialNode connects to cfg.RedisAddrs[0] or, when cfg.RedisSentinels is
// set, to the primary they name (DialFailover), checks that it answers and
// loads scripts. name prefixes its errors ("setnx: …").
func DialNode(ctx context.Context, name string, cfg strategies.Config, scripts ...*redis.Script) (Node, error) {
	cfg = cfg.WithDefaults()
	if len(cfg.RedisAddrs) == 0 && len(cfg.RedisSentinels) == 0 {
		return Node{}, errors.New(name + ": no Redis address in Config.RedisAddrs and no Sentinel in Config.RedisSentinels")
	}
	ttl := cfg.TTL.Truncate(time.Millisecond)
	if ttl <= 0 {
		return Node{}, fmt.Errorf("%s: TTL %v is below PX's 1ms resolution", name, cfg.TTL)
	}
	if cfg.RedisWait > 0 && len(cfg.RedisSentinels) == 0 {
		return Node{}, fmt.Errorf("%s: Config.RedisWait needs replicas: set Config.RedisSentinels (independent masters have none to wait for)", name)
	}
	var (
		c    *redis.Client
		addr string
		err  error
	)
	if len(cfg.RedisSentinels) > 0 {
		m, _ := ParseMaster(cfg.RedisMaster) // DialFailover reports an error
		addr = PrimaryName(m.Name)
		c, err = DialFailover(ctx, cfg, scripts...)
	} else {
		addr = EndpointName(cfg.RedisAddrs[0])
		c, err = Dial(ctx, cfg.RedisAddrs[0], cfg, scripts...)
	}
	if err != nil {
		return Node{}, fmt.Errorf("%s: %w", name, err)
	}
	return Node{Client: c, Addr: addr, TTL: ttl, Owner: cfg.Owner, Wait: cfg.RedisWait, WaitTimeout: cfg.RedisWaitTimeout}, nil
}
