package redisutil

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockbench/lockbench/strategies"
)

// ErrNotReplicated is returned when fewer replicas than Node.Wait
// acknowledged a lock within Node.WaitTimeout. It wraps
// strategies.ErrNotAcquired: the acquisition counts as not acquired, and
// strategies.AcquireRetry tries again.
var ErrNotReplicated = fmt.Errorf("%w: too few replicas acknowledged it (WAIT)", strategies.ErrNotAcquired)

// Take runs set, the command that takes the lock on key for value, and
// reports whether the lock is taken: nil, strategies.ErrNotAcquired when it
// is held, ErrNotReplicated, or set's error. With Wait, set and WAIT run on
// one connection taken from the pool: WAIT counts the acknowledgements of its
// own connection's writes only. A lock too few replicas acknowledged is
// released before Take returns ErrNotReplicated, so it does not block others
// until its TTL. Only a winner pays WAIT's round trip.
func (n Node) Take(ctx context.Context, key, value string, set func(c redis.Cmdable) (bool, error)) error {
	if n.Wait <= 0 {
		return taken(set(n.Client))
	}
	conn := n.Client.Conn()
	defer conn.Close()
	if err := taken(set(conn)); err != nil {
		return err
	}
	if err := n.WaitReplicas(ctx, conn); err != nil {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), DefaultIOTimeout)
		defer cancel()
		_ = Release(rctx, n.Client, key, value)
		return err
	}
	return nil
}

// WaitReplicas sends WAIT Wait WaitTimeout on conn, the connection that
// just took a lock, and returns ErrNotReplicated when fewer than Wait
// replicas acknowledged conn's writes in time; an error from the node as
// is.
func (n Node) WaitReplicas(ctx context.Context, conn *redis.Conn) error {
	got, err := conn.Wait(ctx, n.Wait, n.WaitTimeout).Result()
	if err != nil {
		return err
	}
	if got < int64(n.Wait) {
		return fmt.Errorf("%w: %d of %d replicas in %v", ErrNotReplicated, got, n.Wait, n.WaitTimeout)
	}
	return nil
}

func taken(ok bool, err error) error {
	switch {
	case err != nil:
		return err
	case !ok:
		return strategies.ErrNotAcquired
	}
	return nil
}

// Lock takes the lock on key with set (see Take) and returns its lease. set
// runs the command for rkey (key's name in Redis, LockKey) and the owner value
// it is given, and returns whether it took the lock and the fencing token it
// issued (0 for none). Errors are strategies.ErrNotAcquired (or
// ErrNotReplicated, which wraps it) when the lock was not taken, otherwise
// prefixed by name and classified (strategies.ErrUnavailable when the node
// cannot be reached).
func (n Node) Lock(ctx context.Context, name, key string, set func(c redis.Cmdable, rkey, value string) (bool, int64, error)) (*Lease, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	value, rkey := OwnerValue(n.Owner), LockKey(key)
	// The deadline counts from before the request is sent: the key cannot
	// expire earlier than that plus the TTL, whatever the round trip (and
	// WAIT) took.
	start := time.Now()
	var token int64
	err := n.Take(ctx, key, value, func(c redis.Cmdable) (bool, error) {
		ok, t, err := set(c, rkey, value)
		token = t
		return ok, err
	})
	if errors.Is(err, strategies.ErrNotAcquired) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("%s: acquire %s: %w", name, key, Classify(ctx, n.Addr, err))
	}
	return newLease(n.Client, key, rkey, value, token, start.Add(n.TTL)), nil
}
