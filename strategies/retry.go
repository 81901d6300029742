package strategies

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"
)

// Retry defaults, used when the corresponding Retry field is zero.
const (
	// DefaultRetryBase is the first backoff: 1ms.
	DefaultRetryBase = time.Millisecond
	// DefaultRetryCap is the largest backoff: 50ms.
	DefaultRetryCap = 50 * time.Millisecond
)

// Retry is the policy for retrying a non-blocking Acquire that found the lock
// held. The zero value retries with exponential backoff and full jitter from
// DefaultRetryBase up to DefaultRetryCap, until the context's deadline.
type Retry struct {
	// None makes AcquireRetry try exactly once.
	None bool
	// Base is the first backoff. The default is DefaultRetryBase.
	Base time.Duration
	// Cap bounds each backoff. The default is DefaultRetryCap.
	Cap time.Duration
}

// AcquireRetry takes the lock on key from s, retrying on ErrNotAcquired per
// policy until ctx is done. Unlike the usual fixed-sleep retry loop, the
// backoff is jittered (so contenders do not retry in lockstep), capped, and
// never sleeps past ctx's deadline. Blocking strategies are called
// once: they wait inside Acquire. It returns the number of attempts made.
func AcquireRetry(ctx context.Context, s Strategy, key string, policy Retry) (Lease, int, error) {
	if Blocks(s) || policy.None {
		l, err := s.Acquire(ctx, key)
		return l, 1, err
	}
	base, maxBackoff := policy.Base, policy.Cap
	if base <= 0 {
		base = DefaultRetryBase
	}
	if maxBackoff <= 0 {
		maxBackoff = DefaultRetryCap
	}
	backoff := base
	var timer *time.Timer
	for attempt := 1; ; attempt++ {
		l, err := s.Acquire(ctx, key)
		if err == nil || !errors.Is(err, ErrNotAcquired) {
			return l, attempt, err
		}
		// Full jitter (AWS architecture blog): sleep uniformly in [0, backoff).
		sleep := time.Duration(rand.Int64N(int64(backoff)) + 1)
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < sleep {
			return nil, attempt, ErrNotAcquired
		}
		if timer == nil {
			timer = time.NewTimer(sleep)
			defer timer.Stop()
		} else {
			timer.Reset(sleep)
		}
		select {
		case <-ctx.Done():
			return nil, attempt, ErrNotAcquired
		case <-timer.C:
		}
		backoff = min(backoff*2, maxBackoff)
	}
}

// Sleep waits d, or until ctx is done, and reports whether d passed (for
// d ≤ 0, whether ctx is not done).
func Sleep(ctx context.Context, d time.Duration) bool {
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
