package redislock

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/bsm/redislock"

	"github.com/lockbench/lockbench/strategies"
	"github.com/lockbench/lockbench/strategies/redisutil"
)

func init() {
	strategies.Register(strategies.Info{
		Name:         "redislock",
		Description:  "bsm/redislock library on one Redis node (SET NX PX in Lua, owner-checked release), no retry; no fencing token",
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

// RedisLock locks keys with a redislock.Client on the first Redis node of
// Config.RedisAddrs.
type RedisLock struct {
	redisutil.Node
	locker *redislock.Client
}

var _ strategies.Strategy = (*RedisLock)(nil)

// New connects to cfg.RedisAddrs[0] and checks that it answers.
func New(ctx context.Context, cfg strategies.Config) (*RedisLock, error) {
	n, err := redisutil.DialNode(ctx, "redislock", cfg)
	if err != nil {
		return nil, err
	}
	return &RedisLock{Node: n, locker: redislock.New(n.Client)}, nil
}

// Acquire makes one Obtain attempt. It returns strategies.ErrNotAcquired
// when the lock is held and an error wrapping strategies.ErrUnavailable when
// the node cannot be reached.
func (s *RedisLock) Acquire(ctx context.Context, key string) (strategies.Lease, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// The deadline counts from before the request is sent, as setnx's does.
	start := time.Now()
	l, err := s.locker.Obtain(ctx, redisutil.LockKey(key), s.TTL, nil)
	switch {
	case errors.Is(err, redislock.ErrNotObtained):
		return nil, strategies.ErrNotAcquired
	case err != nil:
		return nil, fmt.Errorf("redislock: acquire %s: %w", key, redisutil.Classify(ctx, s.Addr, err))
	}
	return &lease{key: key, addr: s.Addr, lock: l, deadline: start.Add(s.TTL)}, nil
}

// Close closes the connections. Locks still held expire by their TTL.
func (s *RedisLock) Close() error { return s.Client.Close() }

// lease is one obtained redislock.Lock.
type lease struct {
	key      string
	addr     string
	lock     *redislock.Lock
	deadline time.Time
}

var _ strategies.Lease = (*lease)(nil)

func (l *lease) Key() string         { return l.key }
func (l *lease) Token() int64        { return 0 }
func (l *lease) Deadline() time.Time { return l.deadline }

// Release is Lock.Release: it deletes the key only if it still holds this
// lease's value, and returns strategies.ErrNotOwner when it does not.
func (l *lease) Release(ctx context.Context) error {
	err := l.lock.Release(ctx)
	switch {
	case errors.Is(err, redislock.ErrLockNotHeld):
		return strategies.ErrNotOwner
	case err != nil:
		return fmt.Errorf("redislock: release %s: %w", l.key, redisutil.Classify(ctx, l.addr, err))
	}
	return nil
}
