package faults

import (
	"context"
	"time"

	"github.com/lockbench/lockbench/strategies"
)

// etcdMinLease is the shortest lease a locally started etcd grants: 1.5
// election timeouts (etcd's default 1s), rounded up to whole seconds. The
// etcd strategy asks for the TTL rounded up to whole seconds, and etcd raises
// a shorter request to this.
const etcdMinLease = 2 * time.Second

// leaseTTL is how long a lock of the strategy outlives a holder that stops
// renewing it: the scenario's TTL, except for etcd, whose session TTL is
// whole seconds and at least etcdMinLease.
func leaseTTL(info strategies.Info, ttl time.Duration) time.Duration {
	if info.Backend != strategies.BackendEtcd {
		return ttl
	}
	secs := (ttl + time.Second - 1) / time.Second * time.Second
	return max(secs, etcdMinLease)
}

// outlast is the default length of a pause or slow critical section: 1.5 ×
// the lease TTL + 1s, long enough for the lease to expire, for the server to
// notice and for a waiting contender to take the lock, whatever the
// strategy's renewal period.
func outlast(info strategies.Info, ttl time.Duration) time.Duration {
	return leaseTTL(info, ttl)*3/2 + time.Second
}

// sleep waits d or until ctx is done, and reports whether d elapsed.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// undoTimeout bounds the undoing of a fault (restarting a node, healing a
// proxy) when the run is being cancelled: 30 seconds.
const undoTimeout = 30 * time.Second

// undoCtx is a context for undoing a fault: not cancelled with the run (a
// killed node must come back), but bounded.
func undoCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), undoTimeout)
}

// ms formats d for an event, rounded to the millisecond.
func ms(d time.Duration) string { return d.Round(time.Millisecond).String() }
