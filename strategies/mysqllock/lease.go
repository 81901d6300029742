package mysqllock

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/lockbench/lockbench/strategies"
)

// lease is one GET_LOCK lock, held by the session of conn.
type lease struct {
	s      *Locks
	key    string
	name   string // LockName(key)
	waited bool

	mu   sync.Mutex
	conn *sql.Conn // nil once released, or ended by Close
}

var (
	_ strategies.Lease  = (*lease)(nil)
	_ strategies.Waiter = (*lease)(nil)
)

// Key returns the lock key.
func (l *lease) Key() string { return l.key }

// Token returns 0: GET_LOCK has no fencing token.
func (l *lease) Token() int64 { return 0 }

// Deadline returns the zero time: the lock does not expire, it ends with
// its session.
func (l *lease) Deadline() time.Time { return time.Time{} }

// Waited reports whether the first GET_LOCK found the lock held.
func (l *lease) Waited() bool { return l.waited }

// take hands the lease's connection to the caller, once.
func (l *lease) take() *sql.Conn {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.conn
	l.conn = nil
	return c
}

// Release runs RELEASE_LOCK on the lease's own connection and returns it to
// the pool. It returns strategies.ErrNotOwner when the session no longer holds
// the lock: released already, strategy closed, the lock free or another
// session's, or the connection dead (the server dropped the lock with the
// session, perhaps while the holder still worked). When the release cannot be
// confirmed (a statement timeout, or ctx done) it returns an error wrapping
// strategies.ErrUnavailable or ctx's error. In all these cases the connection
// is closed, never pooled, which ends the lock once the server notices.
func (l *lease) Release(ctx context.Context) error {
	c := l.take()
	if c == nil {
		return strategies.ErrNotOwner
	}
	l.s.untrack(l)
	sctx, cancel := context.WithTimeout(ctx, DefaultStatementTimeout)
	defer cancel()
	var (
		r     sql.NullInt64
		still bool
	)
	err := c.QueryRowContext(sctx, unlockSQL, l.name, l.name).Scan(&r, &still)
	switch {
	case err == nil && r.Valid && r.Int64 == 1 && !still:
		c.Close()
		return nil
	case err == nil && r.Valid && r.Int64 == 1:
		// Released once and still held: the session was granted the lock
		// more than once (GET_LOCK is re-entrant). Ending the session
		// gives up every grant; the lease did own the lock.
		destroy(c)
		return nil
	case err == nil:
		// The session is alive but does not hold the lock: someone else
		// does (0) or nobody (NULL). Whatever it holds instead must not be
		// handed to the next Acquire.
		destroy(c)
		return fmt.Errorf("%w: mysqllock: release %s: the session holds no such lock", strategies.ErrNotOwner, l.key)
	case ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded):
		destroy(c)
		return classify(ctx, "release "+l.key, err)
	case !fromServer(err):
		// A transport error: the connection is gone (reset, or the
		// server restarted), and the session's locks with it.
		destroy(c)
		return fmt.Errorf("%w: mysqllock: release %s: the session ended, and its lock with it: %v", strategies.ErrNotOwner, l.key, err)
	default:
		// An error that left the session up (it may still hold the
		// lock): end it so that the lock goes too.
		destroy(c)
		return classify(ctx, "release "+l.key, err)
	}
}
