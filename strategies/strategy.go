package strategies

import (
	"context"
	"errors"
	"time"
)

// ErrNotAcquired is returned by Acquire when the lock is held by someone else.
var ErrNotAcquired = errors.New("strategies: lock not acquired")

// ErrNotOwner is returned by Release when the lease no longer owns the lock:
// it expired, or another holder has it now. No other holder's lock was
// deleted (a quorum strategy still clears what was left of its own keys).
var ErrNotOwner = errors.New("strategies: lease no longer owns the lock")

// ErrUnavailable wraps errors caused by an unreachable lock server, so callers
// can tell "someone else holds it" from "the server is down".
var ErrUnavailable = errors.New("strategies: lock server unavailable")

// Strategy hands out leases on named locks.
//
// Acquire tries to take the lock on key. A non-blocking strategy makes one
// attempt and returns ErrNotAcquired at once when the lock is held; a blocking
// strategy (see Blocker) waits until it gets the lock or ctx is done. Either
// way Acquire returns promptly when ctx is cancelled, and returns an error
// (never hangs) when its server is down.
type Strategy interface {
	Acquire(ctx context.Context, key string) (Lease, error)
	// Close releases the strategy's connections. Leases still held are not
	// released; they expire by their TTL.
	Close() error
}

// Lease is one granted lock.
type Lease interface {
	// Key is the lock key the lease was granted on.
	Key() string
	// Token is the fencing token: strictly increasing across successive
	// holders of one key. It is 0 when the strategy has no tokens.
	Token() int64
	// Deadline is when the lease stops being valid by the strategy's own
	// reckoning; the zero time when it never expires on its own.
	Deadline() time.Time
	// Release gives the lock up. It returns ErrNotOwner when the lock is no
	// longer this lease's, and never deletes another holder's lock.
	Release(ctx context.Context) error
}

// Blocker is implemented by strategies whose Acquire waits for the lock
// (etcd's concurrency.Mutex, an in-process mutex) instead of failing fast.
// Callers do not retry a blocking strategy; they give it a deadline.
type Blocker interface {
	Blocks() bool
}

// Blocks reports whether s waits inside Acquire.
func Blocks(s Strategy) bool {
	b, ok := s.(Blocker)
	return ok && b.Blocks()
}
