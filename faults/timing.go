package faults

import (
	"context"
	"time"

	"github.com/lockbench/lockbench/results"
	"github.com/lockbench/lockbench/strategies"
)

// outlast is the default length of a pause or slow critical section: 1.5 ×
// the lease TTL (Info.LeaseTTL) + 1s, long enough for the lease to expire, for the server to
// notice and for a waiting contender to take the lock, whatever the
// strategy's renewal period.
func outlast(info strategies.Info, ttl time.Duration) time.Duration {
	return info.LeaseTTL(ttl)*3/2 + time.Second
}

// undoTimeout bounds the undoing of a fault (restarting a node, healing a
// proxy) when the run is being cancelled: 30 seconds.
const undoTimeout = 30 * time.Second

// undoCtx is a context for undoing a fault: not cancelled with the run (a
// killed node must come back), but bounded.
func undoCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), undoTimeout)
}

// ms formats d for an event, as every human-facing duration is formatted
// (results.FormatDuration: three significant digits, "850µs", "6.01s").
func ms(d time.Duration) string { return results.FormatDuration(int64(d)) }
