package setnx

import (
	"context"
	"fmt"
	"time"

	"github.com/lockbench/lockbench/strategies"
	"github.com/lockbench/lockbench/strategies/redisutil"
)

func init() {
	strategies.Register(strategies.Info{
		Name:         "setnx",
		Description:  "Redis SET NX PX on one node, owner-checked release (Lua); no fencing token",
		Need:         strategies.Need{Backend: strategies.BackendRedis, Nodes: 1},
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
	redisutil.Node
}

var _ strategies.Strategy = (*SetNX)(nil)

// New connects to cfg.RedisAddrs[0] and checks that it answers. Locks live
// cfg.TTL (truncated to whole milliseconds, the resolution of PX).
func New(ctx context.Context, cfg strategies.Config) (*SetNX, error) {
	n, err := redisutil.DialNode(ctx, "setnx", cfg, redisutil.ReleaseScript, redisutil.ExtendScript)
	if err != nil {
		return nil, err
	}
	return &SetNX{Node: n}, nil
}

// Acquire makes one SET NX PX attempt. It returns strategies.ErrNotAcquired
// when the lock is held and an error wrapping strategies.ErrUnavailable when
// the node cannot be reached.
func (s *SetNX) Acquire(ctx context.Context, key string) (strategies.Lease, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	value := redisutil.OwnerValue(s.Owner)
	// The deadline counts from before the request is sent: the key cannot
	// expire earlier than that plus the TTL, whatever the round trip took.
	start := time.Now()
	ok, err := s.Client.SetNX(ctx, redisutil.LockKey(key), value, s.TTL).Result()
	if err != nil {
		return nil, fmt.Errorf("setnx: acquire %s: %w", key, redisutil.Classify(ctx, s.Addr, err))
	}
	if !ok {
		return nil, strategies.ErrNotAcquired
	}
	return redisutil.NewLease(s.Client, key, value, 0, start.Add(s.TTL)), nil
}

// Close closes the connections. Locks still held expire by their TTL.
func (s *SetNX) Close() error { return s.Client.Close() }
