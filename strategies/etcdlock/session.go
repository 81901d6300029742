package etcdlock

import (
	"context"
	"slices"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/client/v3/concurrency"
)

// session is a concurrency.Session plus the lock keys it is busy with.
type session struct {
	*concurrency.Session
	// ttl is the TTL the server granted, which may exceed the one asked for.
	ttl time.Duration
	// renewed is when the lease was last granted or renewed, in Unix
	// nanoseconds: before the Grant request was sent, then when each
	// keepalive response arrives. The lease expires ttl after that, unless
	// renewed again.
	renewed atomic.Int64

	// Guarded by Etcd.mu.
	//
	// keys holds the lock keys with a Lock call or a held lease on this
	// session: a Mutex's key is the session's lease ID, so one session must
	// never wait for or hold a lock key twice at once.
	keys map[string]struct{}
	// retired sessions take no new locks; the lease is revoked once keys is
	// empty.
	retired bool
}

// expired reports whether the session's lease is no longer kept alive (it
// expired, or the client was closed).
func (s *session) expired() bool {
	select {
	case <-s.Done():
		return true
	default:
		return false
	}
}

// newSession grants a lease of e.ttl seconds, within e.opTimeout, and starts
// keeping it alive.
func (e *Etcd) newSession(ctx context.Context) (*session, error) {
	gctx, cancel := context.WithTimeout(ctx, e.opTimeout)
	defer cancel()
	sent := time.Now()
	resp, err := e.client.Grant(gctx, e.ttl)
	if err != nil {
		return nil, classify(ctx, "grant lease", err)
	}
	// The session keeps the lease alive with the client's context (which
	// Close cancels), not ctx: it outlives this call.
	cs, err := concurrency.NewSession(e.client, concurrency.WithLease(resp.ID), concurrency.WithTTL(int(resp.TTL)))
	if err != nil {
		_, _ = e.client.Revoke(gctx, resp.ID)
		return nil, classify(ctx, "keep lease alive", err)
	}
	s := &session{Session: cs, ttl: time.Duration(resp.TTL) * time.Second, keys: map[string]struct{}{}}
	s.renewed.Store(sent.UnixNano())
	// The session swallows its keepalive responses; a second channel on
	// the same lease (the client fans responses out) dates the renewals.
	// It closes with the session's context.
	renewals, err := e.client.KeepAlive(cs.Ctx(), resp.ID)
	if err != nil {
		cs.Orphan()
		_, _ = e.client.Revoke(gctx, resp.ID)
		return nil, classify(ctx, "keep lease alive", err)
	}
	go func() {
		for range renewals {
			s.renewed.Store(time.Now().UnixNano())
		}
	}()
	return s, nil
}

// expiry is when the session's lease expires unless it is renewed again.
func (s *session) expiry() time.Time {
	return time.Unix(0, s.renewed.Load()).Add(s.ttl)
}

// reserve returns a live session that is not busy with key, marked busy with
// it, creating a session when none is free. Expired sessions are dropped.
func (e *Etcd) reserve(ctx context.Context, key string) (*session, error) {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil, errClosed
	}
	var free *session
	live := e.sessions[:0]
	for _, s := range e.sessions {
		if s.expired() {
			s.retired = true
			continue
		}
		live = append(live, s)
		if _, busy := s.keys[key]; free == nil && !busy {
			free = s
		}
	}
	clear(e.sessions[len(live):])
	e.sessions = live
	if free != nil {
		free.keys[key] = struct{}{}
		e.mu.Unlock()
		return free, nil
	}
	e.mu.Unlock()

	// Grant outside the mutex: with the cluster down it takes e.opTimeout,
	// and concurrent Acquires must each fail in that time, not queue.
	s, err := e.newSession(ctx)
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		s.Orphan()
		return nil, errClosed
	}
	s.keys[key] = struct{}{}
	e.sessions = append(e.sessions, s)
	return s, nil
}

// free marks s no longer busy with key, and ends s if it is retired and
// idle.
func (e *Etcd) free(s *session, key string) {
	e.mu.Lock()
	delete(s.keys, key)
	end := s.retired && len(s.keys) == 0
	e.mu.Unlock()
	if end {
		go e.end(s)
	}
}

// retire stops s from taking new locks.
func (e *Etcd) retire(s *session) {
	e.mu.Lock()
	defer e.mu.Unlock()
	s.retired = true
	e.sessions = slices.DeleteFunc(e.sessions, func(t *session) bool { return t == s })
}

// end stops keeping s alive and revokes its lease, which deletes any key it
// left behind. When the cluster does not answer, the lease expires by its
// TTL instead.
func (e *Etcd) end(s *session) {
	if s.expired() {
		return // nothing left to revoke
	}
	s.Orphan()
	ctx, cancel := context.WithTimeout(context.Background(), e.opTimeout)
	defer cancel()
	_, _ = e.client.Revoke(ctx, s.Lease())
}
