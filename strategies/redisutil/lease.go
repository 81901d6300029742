package redisutil

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockbench/lockbench/strategies"
)

// Lease is a lock held on one Redis node under a unique owner value. setnx and
// fencing hand it out.
type Lease struct {
	client *redis.Client
	key    string
	// keys holds the key's name in Redis (LockKey), made once: Release
	// passes it as the script's KEYS without building it or a slice again.
	keys     [1]string
	value    string
	token    int64
	deadline strategies.Deadline
}

var (
	_ strategies.Lease    = (*Lease)(nil)
	_ strategies.Extender = (*Lease)(nil)
)

// NewLease returns the lease on key that c holds under value, with fencing
// token token (0 for none), valid until deadline.
func NewLease(c *redis.Client, key, value string, token int64, deadline time.Time) *Lease {
	return newLease(c, key, LockKey(key), value, token, deadline)
}

// newLease is NewLease with key's name in Redis, rkey, already made.
func newLease(c *redis.Client, key, rkey, value string, token int64, deadline time.Time) *Lease {
	l := &Lease{client: c, key: key, keys: [1]string{rkey}, value: value, token: token}
	l.deadline.Set(deadline)
	return l
}

// Key returns the lock key.
func (l *Lease) Key() string { return l.key }

// Token returns the fencing token, 0 when the strategy issues none.
func (l *Lease) Token() int64 { return l.token }

// Deadline returns the start of the acquisition, or of the latest successful
// Extend, plus its TTL: the earliest the key can expire, by this client's
// clock.
func (l *Lease) Deadline() time.Time { return l.deadline.Time() }

// Release deletes the lock if it is still this lease's, and returns
// strategies.ErrNotOwner otherwise.
func (l *Lease) Release(ctx context.Context) error {
	return release(ctx, l.client, l.key, l.keys[:], l.value)
}

// Extend makes the lock live at least ttl (whole milliseconds) from now if it
// is still this lease's, and moves Deadline on to the time before the
// request plus ttl. It returns strategies.ErrNotOwner when the lock expired
// or belongs to someone else, and an error wrapping strategies.ErrUnavailable
// when the node cannot be reached; Deadline is unchanged then.
func (l *Lease) Extend(ctx context.Context, ttl time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	// Before sending, as for Acquire: the script runs later than this, so
	// the key lives at least until start + ttl.
	start := time.Now()
	if err := Extend(ctx, l.client, l.key, l.value, ttl); err != nil {
		return err
	}
	l.deadline.Raise(start.Add(ttl.Truncate(time.Millisecond)))
	return nil
}
