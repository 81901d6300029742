package redsync

import (
	"context"
	"errors"
	"fmt"
	"time"

	rs "github.com/go-redsync/redsync/v4"

	"github.com/lockbench/lockbench/strategies"
)

// lease is one redsync Mutex that holds its lock on a quorum of nodes. A
// Mutex keeps its value and validity in its own fields, so each Acquire makes
// its own and the lease is its only user.
type lease struct {
	key    string
	m      *rs.Mutex
	quorum int
	nodes  int
}

var _ strategies.Lease = (*lease)(nil)

func (l *lease) Key() string  { return l.key }
func (l *lease) Token() int64 { return 0 }

// Deadline is the mutex's Until(): start of the round + TTL − TTL×0.01.
func (l *lease) Deadline() time.Time { return l.m.Until() }

// Release unlocks the mutex on every node (UnlockContext). redsync reports
// success when a quorum still held the value; otherwise it returns per-node
// errors, which decide between strategies.ErrNotOwner and
// strategies.ErrUnavailable as redlock's Release does: nodes that failed may
// still hold the value, so only when too few could have held it for a
// quorum is the lease known to be lost.
func (l *lease) Release(ctx context.Context) error {
	ok, err := l.m.UnlockContext(ctx)
	if ok {
		return nil
	}
	var taken *rs.ErrTaken
	if errors.As(err, &taken) {
		// A quorum of nodes hold someone else's value: redsync returns only
		// this error then, and the counts below would be lost.
		return strategies.ErrNotOwner
	}
	v := tally(err)
	held := l.nodes - v.taken - v.expired - v.down - v.slow // released by this call
	failed := v.down + v.slow
	switch {
	case held+failed < l.quorum:
		return strategies.ErrNotOwner
	case ctx.Err() != nil:
		return fmt.Errorf("redsync: release %s: %w (%v)", l.key, ctx.Err(), err)
	}
	return fmt.Errorf("%w: redsync: release %s: %d of %d nodes failed, %d still held it: %w",
		strategies.ErrUnavailable, l.key, failed, l.nodes, held, err)
}
