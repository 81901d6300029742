package redislock

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/bsm/redislock"
	"github.com/redis/go-redis/v9"

	"github.com/lockbench/lockbench/strategies"
	"github.com/lockbench/lockbench/strategies/redisutil"
)

func init() {
	strategies.Register(strategies.Info{
		Name:         "redislock",
		Order:        40,
		Color:        "#332288", // indigo (Tol)
		Description:  "bsm/redislock library on one Redis node (SET NX PX in Lua, owner-checked release), no retry; no fencing token",
		Need:         strategies.Need{Backend: strategies.BackendRedis, Nodes: 1},
		CrossProcess: true,
		New:          strategies.FactoryOf(New),
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
// the node cannot be reached. With Config.RedisWait the attempt runs on a
// connection of its own, followed there by WAIT (see obtainReplicated).
func (s *RedisLock) Acquire(ctx context.Context, key string) (strategies.Lease, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if s.Wait > 0 {
		return s.obtainReplicated(ctx, key)
	}
	// The deadline counts from before the request is sent, as setnx's does.
	start := time.Now()
	l, err := s.locker.Obtain(ctx, redisutil.LockKey(key), s.TTL, nil)
	if err := s.obtained(ctx, key, err); err != nil {
		return nil, err
	}
	return &lease{key: key, addr: s.Addr, lock: l, deadline: start.Add(s.TTL)}, nil
}

// obtainReplicated is Acquire with WAIT. The library sends its obtain
// script on any pooled connection, and WAIT vouches only for the writes of
// the connection it is sent on, so the lock is obtained through a
// redislock client over one pinned connection (redislock.New takes any
// script runner), WAIT follows on it, and the lease keeps that connection
// until its Release, which the library sends through the same client. Too
// few acknowledgements release the lock at once and count as not acquired
// (redisutil.ErrNotReplicated).
func (s *RedisLock) obtainReplicated(ctx context.Context, key string) (strategies.Lease, error) {
	conn := s.Client.Conn()
	start := time.Now()
	l, err := redislock.New(conn).Obtain(ctx, redisutil.LockKey(key), s.TTL, nil)
	if err := s.obtained(ctx, key, err); err != nil {
		_ = conn.Close()
		return nil, err
	}
	if err := s.WaitReplicas(ctx, conn); err != nil {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), redisutil.DefaultIOTimeout)
		_ = l.Release(rctx)
		cancel()
		_ = conn.Close()
		if errors.Is(err, strategies.ErrNotAcquired) {
			return nil, err
		}
		return nil, fmt.Errorf("redislock: acquire %s: %w", key, redisutil.Classify(ctx, s.Addr, err))
	}
	return &lease{key: key, addr: s.Addr, lock: l, deadline: start.Add(s.TTL), conn: conn}, nil
}

// obtained maps Obtain's error onto lockbench's.
func (s *RedisLock) obtained(ctx context.Context, key string, err error) error {
	switch {
	case errors.Is(err, redislock.ErrNotObtained):
		return strategies.ErrNotAcquired
	case err != nil:
		return fmt.Errorf("redislock: acquire %s: %w", key, redisutil.Classify(ctx, s.Addr, err))
	}
	return nil
}

// Close closes the connections. Locks still held expire by their TTL.
func (s *RedisLock) Close() error { return s.Client.Close() }

// lease is one obtained redislock.Lock.
type lease struct {
	key      string
	addr     string
	lock     *redislock.Lock
	deadline time.Time
	// conn is the connection the lock was obtained on with WAIT, closed
	// once Release has answered; nil without WAIT.
	conn     *redis.Conn
	released bool
}

var _ strategies.Lease = (*lease)(nil)

func (l *lease) Key() string         { return l.key }
func (l *lease) Token() int64        { return 0 }
func (l *lease) Deadline() time.Time { return l.deadline }

// Release is Lock.Release: it deletes the key only if it still holds this
// lease's value, and returns strategies.ErrNotOwner when it does not.
func (l *lease) Release(ctx context.Context) error {
	if l.released {
		// The owner value was this acquisition's alone: once released (or
		// found gone) the key cannot hold it again.
		return strategies.ErrNotOwner
	}
	err := l.lock.Release(ctx)
	if l.conn != nil && (err == nil || errors.Is(err, redislock.ErrLockNotHeld)) {
		l.released = true
		_ = l.conn.Close()
	}
	switch {
	case errors.Is(err, redislock.ErrLockNotHeld):
		return strategies.ErrNotOwner
	case err != nil:
		return fmt.Errorf("redislock: release %s: %w", l.key, redisutil.Classify(ctx, l.addr, err))
	}
	return nil
}
