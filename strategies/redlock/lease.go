package redlock

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockbench/lockbench/strategies"
	"github.com/lockbench/lockbench/strategies/redisutil"
)

// lease is a lock held on a quorum of nodes under one owner value.
type lease struct {
	r        *Redlock
	key      string
	value    string
	deadline strategies.Deadline
}

var (
	_ strategies.Lease    = (*lease)(nil)
	_ strategies.Extender = (*lease)(nil)
)

func (l *lease) Key() string         { return l.key }
func (l *lease) Token() int64        { return 0 }
func (l *lease) Deadline() time.Time { return l.deadline.Time() }

// Release compare-and-deletes on every node in parallel. It returns nil when
// a quorum still had the lease's value (redsync's rule), and
// strategies.ErrNotOwner when too few did even counting the nodes that did not
// answer: another holder may have the lock. When failures leave it undecided,
// it returns them as joined *NodeError values (wrapping
// strategies.ErrUnavailable): the lock may be held until its TTL. Each node
// gets the client's I/O timeout (redisutil.DefaultIOTimeout), not the per-node
// one: a key left on a slow node would keep that node's vote from every other
// contender until its TTL.
func (l *lease) Release(ctx context.Context) error {
	rkey := redisutil.LockKey(l.key)
	errs := l.r.each(ctx, 0, func(ctx context.Context, _ int, c *redis.Client) error {
		return release(ctx, c, rkey, l.value)
	})
	var failed []error
	deleted := 0
	for _, err := range errs {
		switch {
		case err == nil:
			deleted++
		case !errors.Is(err, strategies.ErrNotOwner):
			failed = append(failed, err)
		}
	}
	switch {
	case deleted >= l.r.quorum:
		return nil
	case deleted+len(failed) >= l.r.quorum:
		return fmt.Errorf("%w: redlock: release %s: %d of %d nodes answered, %d still held it: %w",
			strategies.ErrUnavailable, l.key, len(errs)-len(failed), len(errs), deleted, errors.Join(failed...))
	}
	return strategies.ErrNotOwner
}

// Extend runs redisutil.ExtendScript on every node in parallel, each bounded
// by the per-node timeout. When a quorum still held the value and validity is
// left (as for Acquire), Deadline moves on to the time before the round plus
// that validity. When too few held it even counting the silent nodes, it
// deletes the lease's keys left elsewhere, as Release would, to give their
// votes back, and returns strategies.ErrNotOwner. Otherwise (nodes failed, or
// no validity left) it returns an error wrapping strategies.ErrUnavailable and
// leaves Deadline as it was: still conservative, as the script never shortens
// an expiry.
func (l *lease) Extend(ctx context.Context, ttl time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	ms, err := redisutil.ExtendTTL(l.key, ttl)
	if err != nil {
		return fmt.Errorf("redlock: %w", err)
	}
	rkey := redisutil.LockKey(l.key)
	start := time.Now()
	errs := l.r.each(ctx, l.r.nodeTimeout, func(ctx context.Context, _ int, c *redis.Client) error {
		return extend(ctx, c, rkey, l.value, ms)
	})
	validity := ms - time.Since(start) - drift(ms)
	var failed []error
	extended := 0
	for _, err := range errs {
		switch {
		case err == nil:
			extended++
		case !errors.Is(err, strategies.ErrNotOwner):
			failed = append(failed, err)
		}
	}
	switch {
	case extended >= l.r.quorum && validity > 0:
		l.deadline.Raise(start.Add(validity))
		return nil
	case extended >= l.r.quorum:
		return fmt.Errorf("%w: redlock: extend %s: a quorum answered after the validity was used up (%v left)",
			strategies.ErrUnavailable, l.key, validity)
	case extended+len(failed) >= l.r.quorum:
		return fmt.Errorf("%w: redlock: extend %s: %d of %d nodes answered, %d still held it: %w",
			strategies.ErrUnavailable, l.key, len(errs)-len(failed), len(errs), extended, errors.Join(failed...))
	}
	// Not ours any more. Delete what is left of our value where it may be:
	// on the nodes that extended it and on those that failed. The caller's
	// ctx may be done; the undo must run all the same.
	l.r.each(context.WithoutCancel(ctx), l.r.nodeTimeout, func(ctx context.Context, i int, c *redis.Client) error {
		if errors.Is(errs[i], strategies.ErrNotOwner) {
			return nil
		}
		return release(ctx, c, rkey, l.value)
	})
	return strategies.ErrNotOwner
}

// extend runs the compare-and-extend script for rkey on c, and returns
// strategies.ErrNotOwner where c does not hold value.
func extend(ctx context.Context, c *redis.Client, rkey, value string, ttl time.Duration) error {
	n, err := redisutil.ExtendScript.Run(ctx, c, []string{rkey}, value, ttl.Milliseconds()).Int64()
	if err == nil && n == 0 {
		err = strategies.ErrNotOwner
	}
	return err
}
