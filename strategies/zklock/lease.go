package zklock

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/lockbench/lockbench/strategies"
)

// lease is one held lock: our znode, lowest in its key's queue.
type lease struct {
	z        *ZooKeeper
	key      string
	n        *node
	waited   bool // Acquire found a predecessor and waited for it
	released atomic.Bool
}

var _ strategies.Waiter = (*lease)(nil)

// Waited reports whether Acquire had to wait for a predecessor's znode.
func (l *lease) Waited() bool { return l.waited }

// newLease wraps n, which has just been found lowest in its queue. The token
// is n's sequence number plus one (0 means "no token" to the store, and the
// first znode is number 0). ZooKeeper numbers a sequential znode with its
// parent's child version, which every child create and delete increments and
// nothing decrements (parents are never deleted, see makeParents), so a later
// znode has a larger number. The holder has the smallest, so its successor's
// znode either existed already (larger, or it would have held first) or came
// later (larger still), however the holder went (Release, or expiry while
// paused). The number names exactly one znode, which Release deletes.
func (z *ZooKeeper) newLease(key string, n *node) *lease {
	return &lease{z: z, key: key, n: n}
}

// Key returns the lock key.
func (l *lease) Key() string { return l.key }

// Token returns the lock znode's sequence number plus one.
func (l *lease) Token() int64 { return l.n.seq + 1 }

// Deadline returns the send time of the latest request the server answered
// in the lock znode's session, plus the session timeout it granted. It moves
// on with every answer while the process runs and stops when the session is
// lost or the process paused; the server expires the session no earlier (up
// to TickTime later).
func (l *lease) Deadline() time.Time { return l.n.s.expiry() }

// Release deletes the lock znode if it is still there (version-checked:
// ours is never modified). It returns strategies.ErrNotOwner when it is
// gone, which happens when the session expired (its ephemeral znodes went
// with it), and on a second Release. When the server does not answer,
// Release returns an error wrapping strategies.ErrUnavailable and keeps
// deleting the znode in the background, so that it cannot block the key.
func (l *lease) Release(ctx context.Context) error {
	if !l.released.CompareAndSwap(false, true) {
		return strategies.ErrNotOwner
	}
	_, err := l.z.do(ctx, func() error { return l.z.conn.Delete(l.n.path, 0) })
	switch {
	case err == nil:
		return nil
	case errors.Is(err, zk.ErrNoNode), errors.Is(err, zk.ErrBadVersion):
		return strategies.ErrNotOwner
	case errors.Is(err, zk.ErrSessionExpired):
		// The request was waiting on the old session's connection; the
		// server deleted the znode with the session.
		return strategies.ErrNotOwner
	}
	go l.z.forget(l.n.path)
	return classify(ctx, "release "+l.key, err)
}
