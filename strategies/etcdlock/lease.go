package etcdlock

import (
	"context"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/lockbench/lockbench/strategies"
)

// lease is one held concurrency.Mutex.
type lease struct {
	e        *Etcd
	s        *session
	key      string
	m        *concurrency.Mutex
	token    int64
	waited   bool
	released atomic.Bool
}

// newLease wraps m, which Lock has just granted.
//
// The token is the create revision of m's key, not m.Header().Revision. Both
// grow across successive holders, but the create revision is the one the
// lock is defined by: the holder is always the key with the smallest create
// revision under the prefix, so a holder's successor either had its key
// already (a larger create revision, or it would have held the lock first)
// or created it later (a larger revision still, since etcd's revision only
// grows). That holds however the previous holder went (Unlock, or its lease
// expired while it was paused), the revision identifies exactly one key
// incarnation, and it is what Release compares against. The header revision
// is only the store's revision when Lock returned: it names no key and
// depends on which request happened to answer last.
func (e *Etcd) newLease(s *session, key string, m *concurrency.Mutex) *lease {
	owner := m.IsOwner()
	token := owner.GetCompare().GetCreateRevision()
	return &lease{
		e:     e,
		s:     s,
		key:   key,
		m:     m,
		token: token,
		// Lock keeps the header of the response that granted it: the
		// transaction that created our key (at revision token) when the
		// lock was free, or the read after the predecessors' deletions
		// (a later revision) when it waited.
		waited: m.Header().GetRevision() > token,
	}
}

var _ strategies.Waiter = (*lease)(nil)

// Waited reports whether Lock waited for a predecessor's key to go.
func (l *lease) Waited() bool { return l.waited }

// Key returns the lock key.
func (l *lease) Key() string { return l.key }

// Token returns the create revision of the holder's key in etcd.
func (l *lease) Token() int64 { return l.token }

// Deadline returns the session lease's last renewal plus the TTL: it moves on
// with every keepalive and stops when they stop (see the package's Caveats).
func (l *lease) Deadline() time.Time { return l.s.expiry() }

// Release deletes the holder's key if it is still this lease's (same create
// revision). It returns strategies.ErrNotOwner when the key is gone, which
// happens when the session's lease expired, and on a second Release.
func (l *lease) Release(ctx context.Context) error {
	if !l.released.CompareAndSwap(false, true) {
		return strategies.ErrNotOwner
	}
	return l.e.unlock(ctx, l.s, l.key, l.m)
}
