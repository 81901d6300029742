package setnx

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockbench/lockbench/strategies"
	"github.com/lockbench/lockbench/strategies/redisutil"
)

func init() {
	strategies.Register(strategies.Info{
		Name:         "setnx",
		Description:  "Redis SET NX PX on one node, owner-checked release (Lua); no fencing token",
		Backend:      strategies.BackendRedis,
		RedisNodes:   1,
		CrossProcess: true,
		New: func(ctx context.Context, cfg strategies.Config) (strategies.Strategy, error) {
			s, err := New(ctx, cfg)
			if err != nil {
				return nil, err // not a typed nil in a non-nil interface
			}
			return s, nil
		},
	})
}

// SetNX locks keys on the first Redis node of Config.RedisAddrs.
type SetNX struct {
	client *redis.Client
	addr   string
	ttl    time.Duration
	owner  string
}

var _ strategies.Strategy = (*SetNX)(nil)

// New connects to cfg.RedisAddrs[0] and checks that it answers. Locks live
// cfg.TTL (truncated to whole milliseconds, the resolution of PX).
func New(ctx context.Context, cfg strategies.Config) (*SetNX, error) {
	cfg = cfg.WithDefaults()
	if len(cfg.RedisAddrs) == 0 {
		return nil, errors.New("setnx: no Redis address in Config.RedisAddrs")
	}
	ttl := cfg.TTL.Truncate(time.Millisecond)
	if ttl <= 0 {
		return nil, fmt.Errorf("setnx: TTL %v is below PX's 1ms resolution", cfg.TTL)
	}
	addr := cfg.RedisAddrs[0]
	c, err := redisutil.Dial(ctx, addr, cfg.RedisPassword, redisutil.ReleaseScript)
	if err != nil {
		return nil, fmt.Errorf("setnx: %w", err)
	}
	return &SetNX{client: c, addr: addr, ttl: ttl, owner: cfg.Owner}, nil
}

// Acquire makes one SET NX PX attempt. It returns strategies.ErrNotAcquired
// when the lock is held and an error wrapping strategies.ErrUnavailable when
// the node cannot be reached.
func (s *SetNX) Acquire(ctx context.Context, key string) (strategies.Lease, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	value := redisutil.OwnerValue(s.owner)
	// The deadline counts from before the request is sent: the key cannot
	// expire earlier than that plus the TTL, whatever the round trip took.
	start := time.Now()
	ok, err := s.client.SetNX(ctx, redisutil.LockKey(key), value, s.ttl).Result()
	if err != nil {
		return nil, fmt.Errorf("setnx: acquire %s: %w", key, redisutil.Classify(ctx, s.addr, err))
	}
	if !ok {
		return nil, strategies.ErrNotAcquired
	}
	return redisutil.NewLease(s.client, key, value, 0, start.Add(s.ttl)), nil
}

// Close closes the connections. Locks still held expire by their TTL.
func (s *SetNX) Close() error { return s.client.Close() }
