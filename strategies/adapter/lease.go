package adapter

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lockbench/lockbench/strategies"
)

// lease is a lock the adapter granted, named by the id of its acquire.
type lease struct {
	s      *Strategy
	id     int64
	key    string
	token  int64
	waited bool
	held   *holding
	// noDeadline: a session or renewed lease, which does not expire while
	// its holder runs.
	noDeadline bool
	deadline   strategies.Deadline
}

// extLease is a lease of an adapter that extends.
type extLease struct{ *lease }

func (l *lease) Key() string  { return l.key }
func (l *lease) Token() int64 { return l.token }
func (l *lease) Waited() bool { return l.waited }

func (l *lease) Deadline() time.Time {
	if l.noDeadline {
		return time.Time{}
	}
	return l.deadline.Time()
}

// Release asks the adapter to release the lock. A lock the adapter reported
// lost is released all the same, and Release then returns an error wrapping
// strategies.ErrNotOwner: the load generator counts it as lost_lock.
func (l *lease) Release(ctx context.Context) error {
	m, err := l.s.call(ctx, request{Op: opRelease, Lock: l.id})
	lost := l.held.lost.Load()
	switch {
	case err != nil && !lost:
		return err
	case lost:
		return fmt.Errorf("%s: lock on %s reported lost by the library: %w", l.s.hello.Name, l.key, strategies.ErrNotOwner)
	case !m.OK:
		return l.s.answerErr(ctx, "release "+l.key, m)
	}
	return nil
}

// Extend asks the adapter to extend the lock to ttl from now. A
// successful one moves Deadline on to the time before the call plus ttl
// (or the valid_ms the adapter answers).
func (l *extLease) Extend(ctx context.Context, ttl time.Duration) error {
	before := time.Now()
	m, err := l.s.call(ctx, request{Op: opExtend, Lock: l.id, TTLMs: ttl.Milliseconds()})
	switch {
	case err != nil:
		return err
	case !m.OK:
		return l.s.answerErr(ctx, "extend "+l.key, m)
	case l.held.lost.Load():
		return fmt.Errorf("%s: lock on %s reported lost by the library: %w", l.s.hello.Name, l.key, strategies.ErrNotOwner)
	}
	if m.ValidMs != nil {
		l.deadline.Raise(before.Add(time.Duration(*m.ValidMs) * time.Millisecond))
	} else {
		l.deadline.Raise(before.Add(ttl))
	}
	return nil
}

// call sends r, due by ctx's deadline (DefaultCallTimeout when it has
// none), and waits for its answer.
func (s *Strategy) call(ctx context.Context, r request) (message, error) {
	if err := ctx.Err(); err != nil {
		return message{}, err
	}
	dl, ok := ctx.Deadline()
	if !ok {
		dl = time.Now().Add(DefaultCallTimeout)
	}
	c, err := s.p.send(r, dl)
	if err != nil {
		return message{}, err
	}
	m, err := s.p.wait(ctx, c)
	if err != nil && !errors.Is(err, strategies.ErrAdapterLost) {
		err = fmt.Errorf("%s: %s: %w", s.hello.Name, r.Op, err)
	}
	return m, err
}
