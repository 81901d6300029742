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
	client   *redis.Client
	key      string
	value    string
	token    int64
	deadline time.Time
}

var _ strategies.Lease = (*Lease)(nil)

// NewLease returns the lease on key that c holds under value, with fencing
// token token (0 for none), valid until deadline.
func NewLease(c *redis.Client, key, value string, token int64, deadline time.Time) *Lease {
	return &Lease{client: c, key: key, value: value, token: token, deadline: deadline}
}

// Key returns the lock key.
func (l *Lease) Key() string { return l.key }

// Token returns the fencing token, 0 when the strategy issues none.
func (l *Lease) Token() int64 { return l.token }

// Deadline returns the start of the acquisition plus the TTL: the earliest
// the key can expire, by this client's clock.
func (l *Lease) Deadline() time.Time { return l.deadline }

// Release deletes the lock if it is still this lease's, and returns
// strategies.ErrNotOwner otherwise.
func (l *Lease) Release(ctx context.Context) error {
	return Release(ctx, l.client, l.key, l.value)
}
