package strategies

import (
	"context"
	"errors"
	"sync/atomic"
	"time"
)

// ErrNotAcquired is returned by Acquire when the lock is held by someone else.
var ErrNotAcquired = errors.New("strategies: lock not acquired")

// ErrNotOwner is returned by Release and Extend when the lease no longer owns
// the lock: it expired, or another holder has it now. No other holder's lock
// was deleted or extended (a quorum strategy still clears what was left of
// its own keys).
var ErrNotOwner = errors.New("strategies: lease no longer owns the lock")

// ErrTransactional is returned by Acquire of a strategy that takes no lock
// (Info.Transactional): its deliveries are processed in one database
// transaction instead.
var ErrTransactional = errors.New("strategies: a transactional strategy takes no lock")

// ErrUnavailable wraps errors caused by an unreachable lock server, so callers
// can tell "someone else holds it" from "the server is down".
var ErrUnavailable = errors.New("strategies: lock server unavailable")

// ErrAdapterLost wraps the errors of a strategy whose adapter process
// (package strategies/adapter) exited, hung or broke the protocol: that
// call and every later one of the strategy fail with it, counted as the
// error class adapter_lost.
var ErrAdapterLost = errors.New("strategies: adapter lost")

// ErrInterrupted wraps the errors of a strategy whose adapter was stopped
// by the signal that stops lockbench (SIGINT, SIGTERM, SIGHUP sent to the
// process group, as `timeout` and a terminal do): the run is ending, and
// its calls count as interrupted, in no error class.
var ErrInterrupted = errors.New("strategies: interrupted with lockbench")

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

// Waiter is implemented by leases of blocking strategies that know whether
// Acquire had to wait for a predecessor (an etcd key created after the
// holder's, a busy in-process mutex), for the acquire latency by outcome.
type Waiter interface {
	Waited() bool
}

// Waited reports whether l's Acquire waited for a predecessor; false for a
// lease that does not say (Waiter).
func Waited(l Lease) bool {
	w, ok := l.(Waiter)
	return ok && w.Waited()
}

// Blocks reports whether s waits inside Acquire.
func Blocks(s Strategy) bool {
	b, ok := s.(Blocker)
	return ok && b.Blocks()
}

// Extender is implemented by leases that can be renewed (Redisson's watchdog,
// redsync's Extend); find it by type assertion. Extend makes the lock stay
// this lease's for at least ttl from now, and never shortens it. It returns
// ErrNotOwner, extending nothing, when the lock is no longer this lease's, and
// an error wrapping ErrUnavailable when the server cannot be reached. Success
// moves Deadline on to the time before the call plus ttl (less any allowance
// for round trip and clock drift) unless it was later already; a failure
// leaves it, which stays conservative as Extend never shortens. Extend may be
// called concurrently with the lease's other methods and with itself.
type Extender interface {
	Extend(ctx context.Context, ttl time.Duration) error
}

// Deadline is a lease's deadline that Extend moves on while other
// goroutines read it, for Extender implementations. It keeps the monotonic
// clock reading of the times it is given, so time.Until on a deadline is
// not fooled by a step of the wall clock. Its zero value is the time the
// package was initialized, not the zero time: Set it before sharing the
// lease. A Deadline must not be copied after first use.
type Deadline struct {
	ns atomic.Int64 // nanoseconds since deadlineEpoch
}

// deadlineEpoch anchors every Deadline. It has a monotonic clock reading, so
// t.Sub(deadlineEpoch) is measured on the monotonic clock when t has one
// too, and deadlineEpoch.Add returns a time that has one.
var deadlineEpoch = time.Now()

// Set sets d to t.
func (d *Deadline) Set(t time.Time) { d.ns.Store(int64(t.Sub(deadlineEpoch))) }

// Raise moves d to t if t is later. Concurrent extensions that each raise it
// leave the latest of their deadlines, whatever order they finish in; that
// is conservative because an extension never shortens the lock, so the lock
// outlives each of them.
func (d *Deadline) Raise(t time.Time) {
	ns := int64(t.Sub(deadlineEpoch))
	for old := d.ns.Load(); ns > old && !d.ns.CompareAndSwap(old, ns); old = d.ns.Load() {
	}
}

// Time returns d.
func (d *Deadline) Time() time.Time { return deadlineEpoch.Add(time.Duration(d.ns.Load())) }
