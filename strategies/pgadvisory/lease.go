package pgadvisory

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockbench/lockbench/strategies"
)

// lease is one advisory lock, held by the session of conn.
type lease struct {
	a   *Advisory
	key string
	id  int64

	mu   sync.Mutex
	conn *pgxpool.Conn // nil once released, or ended by Close
}

// Key returns the lock key.
func (l *lease) Key() string { return l.key }

// Token returns 0: advisory locks have no fencing token.
func (l *lease) Token() int64 { return 0 }

// Deadline returns the zero time: the lock does not expire, it ends with
// its session.
func (l *lease) Deadline() time.Time { return time.Time{} }

// take hands the lease's connection to the caller, once.
func (l *lease) take() *pgxpool.Conn {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.conn
	l.conn = nil
	return c
}

// Release unlocks on the lease's own connection and returns it to the pool.
// It returns strategies.ErrNotOwner when the session no longer holds the
// lock: released already, strategy closed, no lock found, or the connection
// dead (the server dropped the lock with the session, perhaps while the
// holder still worked). When the unlock cannot be confirmed (a statement
// timeout, or ctx done) it returns an error wrapping strategies.ErrUnavailable
// or ctx's error. In all these cases the connection is closed, never pooled,
// which ends the lock once the server notices.
func (l *lease) Release(ctx context.Context) error {
	c := l.take()
	if c == nil {
		return strategies.ErrNotOwner
	}
	l.a.untrack(l)
	sctx, cancel := context.WithTimeout(ctx, DefaultStatementTimeout)
	defer cancel()
	var unlocked bool
	err := c.QueryRow(sctx, unlockSQL, l.id).Scan(&unlocked)
	switch {
	case err == nil && unlocked:
		c.Release()
		return nil
	case err == nil:
		// The session is alive but does not hold the lock: not the session
		// that took it (a pooler in between), or reset under us. Whatever
		// it holds instead must not be handed to the next Acquire.
		destroy(c)
		return fmt.Errorf("%w: pgadvisory: release %s: the session holds no such lock", strategies.ErrNotOwner, l.key)
	case ctx.Err() != nil || pgconn.Timeout(err):
		destroy(c)
		return classify(ctx, "release "+l.key, err)
	case c.Conn().IsClosed():
		// pgx closes a connection on a transport error or a FATAL from
		// the server (terminated, shutting down): the session is gone,
		// and its locks with it.
		destroy(c)
		return fmt.Errorf("%w: pgadvisory: release %s: the session ended, and its lock with it: %v", strategies.ErrNotOwner, l.key, err)
	default:
		// An error that left the session up (it may still hold the lock):
		// end it so that the lock goes too.
		destroy(c)
		return classify(ctx, "release "+l.key, err)
	}
}
