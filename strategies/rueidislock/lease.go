package rueidislock

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/lockbench/lockbench/strategies"
)

// lease is one lock WithContext granted: its context, done once the lock is
// lost or released, and the library's cancel function, which releases it.
type lease struct {
	key string
	// ctx is the library's lock context: the library cancels it when it
	// finds a majority of its keys gone or not its own (a renewal refused,
	// an invalidation for a key another holder now has), when a renewal
	// fails, and when the lease is released.
	ctx context.Context
	// unlock is WithContext's cancel function: it cancels ctx, makes each
	// key's goroutine delete its key if it still holds the lease's value,
	// and waits for all of them.
	unlock context.CancelFunc
	// stop cancels the context WithContext was given, once unlock is done.
	stop     context.CancelCauseFunc
	deadline time.Time
	released atomic.Bool
}

var _ strategies.Lease = (*lease)(nil)

func (l *lease) Key() string { return l.key }

// Token is 0: the library's key values are random, with no order.
func (l *lease) Token() int64 { return 0 }

// Deadline is when the first key validity runs out: the start of Acquire +
// KeyValidity, before any key was set. The library renews the keys every
// ExtendInterval without telling its caller when, so the Deadline does not
// move; the lock is the lease's for as long as ctx is live, renewals
// permitting. A holder that checks it sees the earliest time the lock could
// have lapsed had every renewal failed.
func (l *lease) Deadline() time.Time { return l.deadline }

// Lost returns a channel closed once the library has given the lock up
// (the lock context's Done): lost, or released.
func (l *lease) Lost() <-chan struct{} { return l.ctx.Done() }

// Release releases the lock with the library's cancel function: each key's
// goroutine deletes its key if it still holds the lease's value (a script),
// so another holder's key is never deleted. It returns
// strategies.ErrNotOwner when the library had already cancelled the lock
// context (a majority of keys lost), and on a second Release. The library
// retries a delete until it reaches the server, unbounded; Release waits
// for it until ctx is done, then returns ctx's error, the deletes going on.
// A loss the library has not noticed yet (its invalidation still in
// flight) releases as nil.
func (l *lease) Release(ctx context.Context) error {
	if !l.released.CompareAndSwap(false, true) {
		return strategies.ErrNotOwner
	}
	lost := l.ctx.Err() != nil
	done := make(chan struct{})
	go func() {
		l.unlock()
		l.stop(nil)
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		return fmt.Errorf("rueidislock: release %s: keys not yet deleted: %w", l.key, ctx.Err())
	}
	if lost {
		return fmt.Errorf("%w: rueidislock: %s: the library had cancelled the lock (a majority of its keys gone or another's)", strategies.ErrNotOwner, l.key)
	}
	return nil
}
