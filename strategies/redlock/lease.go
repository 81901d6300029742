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

// Release compare-and-deletes on every node in parallel. The lease was
// still held if a quorum of nodes still had its value (redsync's rule):
// then it returns nil. It returns strategies.ErrNotOwner when too few did
// for a quorum even counting the nodes that did not answer: the lock had
// expired (or been taken) on enough nodes that another holder may have it.
// When that cannot be told because nodes failed, it returns their failures
// as joined *NodeError values (wrapping strategies.ErrUnavailable): the lock
// may still be held until its TTL.
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
