package setnx

import (
	"context"

	"github.com/redis/go-redis/v9"

	"github.com/lockbench/lockbench/strategies"
	"github.com/lockbench/lockbench/strategies/redisutil"
)

func init() {
	strategies.Register(strategies.Info{
		Name:         "setnx",
		Order:        30,
		Color:        "#d55e00", // vermillion
		Description:  "Redis SET NX PX on one node, owner-checked release (Lua); no fencing token",
		Need:         strategies.Need{Backend: strategies.BackendRedis, Nodes: 1},
		CrossProcess: true,
		// Nothing reads a call's context once the call has returned.
		KeepsNoContext: true,
		New:            strategies.FactoryOf(New),
	})
}

// SetNX locks keys on the first Redis node of Config.RedisAddrs, or on the
// primary the Sentinels of Config.RedisSentinels name.
type SetNX struct {
	redisutil.Node
}

var _ strategies.Strategy = (*SetNX)(nil)

// New connects to cfg.RedisAddrs[0] (or the primary behind
// cfg.RedisSentinels) and checks that it answers. Locks live
// cfg.TTL (truncated to whole milliseconds, the resolution of PX).
func New(ctx context.Context, cfg strategies.Config) (*SetNX, error) {
	n, err := redisutil.DialNode(ctx, "setnx", cfg, redisutil.ReleaseScript, redisutil.ExtendScript)
	if err != nil {
		return nil, err
	}
	return &SetNX{Node: n}, nil
}

// Acquire makes one SET NX PX attempt (followed by WAIT when
// Config.RedisWait asks for it: redisutil.Node.Take). It returns
// strategies.ErrNotAcquired when the lock is held (or too few replicas
// acknowledged it) and an error wrapping strategies.ErrUnavailable when the
// node cannot be reached.
func (s *SetNX) Acquire(ctx context.Context, key string) (strategies.Lease, error) {
	l, err := s.Lock(ctx, "setnx", key, func(c redis.Cmdable, rkey, value string) (bool, int64, error) {
		ok, err := c.SetNX(ctx, rkey, value, s.TTL).Result()
		return ok, 0, err
	})
	if err != nil {
		return nil, err // not a typed nil in a non-nil interface
	}
	return l, nil
}

// Close closes the connections. Locks still held expire by their TTL.
func (s *SetNX) Close() error { return s.Client.Close() }
