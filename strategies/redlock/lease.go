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
	deadline time.Time
}

var _ strategies.Lease = (*lease)(nil)

func (l *lease) Key() string         { return l.key }
func (l *lease) Token() int64        { return 0 }
func (l *lease) Deadline() time.Time { return l.deadline }

// Release compare-and-deletes on every node in parallel. When fewer than a
// quorum of nodes answer it returns their failures as joined *NodeError values
// (wrapping strategies.ErrUnavailable): the lock may still be held until its
// TTL. Otherwise it returns strategies.ErrNotOwner if no node still held the
// lease's value (it expired, or was taken), and nil if any did; a failed
// minority does not matter, as it cannot make a quorum for anyone.
//
// Unlike Acquire, Release waits for every node up to the client's I/O timeout
// (redisutil.DefaultIOTimeout) rather than the per-node timeout: giving up
// early on a slow node would leave the key there until its TTL, keeping that
// node's vote from every other contender.
func (l *lease) Release(ctx context.Context) error {
	rkey := redisutil.LockKey(l.key)
	errs := l.r.each(ctx, 0, func(ctx context.Context, _ int, c *redis.Client) error {
		return release(ctx, c, rkey, l.value)
	})
	var failed []error
	for _, err := range errs {
		if err != nil && !errors.Is(err, strategies.ErrNotOwner) {
			failed = append(failed, err)
		}
	}
	answered := len(errs) - len(failed)
	switch {
	case answered < l.r.quorum:
		return fmt.Errorf("%w: redlock: release %s: only %d of %d nodes answered: %w",
			strategies.ErrUnavailable, l.key, answered, len(errs), errors.Join(failed...))
	case countErrs(errs) == len(errs):
		return strategies.ErrNotOwner
	}
	return nil
}
