// Package mutex is an in-process lock per key, per instance: what sync.Mutex
// gives an application. Each instance builds its own Mutex, so it excludes the
// workers of one instance and nobody else, exactly as in production. With more
// than one instance receiving the same payment it is unsafe, and lockbench
// shows that.
//
// It uses a one-slot channel per key instead of sync.Mutex itself so that
// Acquire can honour ctx (sync.Mutex.Lock cannot be cancelled).
package mutex

import (
	"context"
	"sync"
	"time"

	"github.com/lockbench/lockbench/strategies"
)

func init() {
	strategies.Register(strategies.Info{
		Name:        "mutex",
		Order:       20,
		Color:       "#cc79a7", // reddish purple
		Description: "in-process mutex per key, per instance: no exclusion across instances",
		// Nothing reads a call's context once the call has returned.
		KeepsNoContext: true,
		New: func(context.Context, strategies.Config) (strategies.Strategy, error) {
			return New(), nil
		},
	})
}

// Mutex is a set of per-key in-process locks.
type Mutex struct {
	mu    sync.Mutex
	slots map[string]chan struct{}
}

var (
	_ strategies.Strategy = (*Mutex)(nil)
	_ strategies.Blocker  = (*Mutex)(nil)
)

// New returns an empty Mutex.
func New() *Mutex { return &Mutex{slots: map[string]chan struct{}{}} }

// Blocks reports true: Acquire waits for the key.
func (*Mutex) Blocks() bool { return true }

func (m *Mutex) slot(key string) chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.slots[key]
	if !ok {
		s = make(chan struct{}, 1)
		m.slots[key] = s
	}
	return s
}

// Acquire waits until key is free in this instance or ctx is done.
func (m *Mutex) Acquire(ctx context.Context, key string) (strategies.Lease, error) {
	if err := ctx.Err(); err != nil {
		return nil, err // select would pick a free slot half the time
	}
	s := m.slot(key)
	select {
	case s <- struct{}{}:
		return &lease{key: key, slot: s}, nil
	default: // held: wait for it
	}
	select {
	case s <- struct{}{}:
		return &lease{key: key, slot: s, waited: true}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Close does nothing.
func (*Mutex) Close() error { return nil }

type lease struct {
	key    string
	slot   chan struct{}
	once   sync.Once
	waited bool
}

var _ strategies.Waiter = (*lease)(nil)

// Waited reports whether Acquire found the key held and waited.
func (l *lease) Waited() bool { return l.waited }

func (l *lease) Key() string       { return l.key }
func (*lease) Token() int64        { return 0 }
func (*lease) Deadline() time.Time { return time.Time{} }

// Release frees the slot; a second Release reports ErrNotOwner.
func (l *lease) Release(context.Context) error {
	released := false
	l.once.Do(func() { <-l.slot; released = true })
	if !released {
		return strategies.ErrNotOwner
	}
	return nil
}
