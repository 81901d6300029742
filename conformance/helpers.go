package conformance

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lockbench/lockbench/strategies"
)

// Timing of the suite. Exclusion and cancellation cases use LongTTL so that no
// lease expires by accident under a loaded -race run; expiry cases use
// ShortTTL so they finish quickly.
const (
	// LongTTL is the TTL of cases about exclusion: 10s (whole seconds, so
	// strategies with second granularity, etcd, do not round it).
	LongTTL = 10 * time.Second
	// ShortTTL is the TTL of cases about expiry: 500ms.
	ShortTTL = 500 * time.Millisecond
	// ExpiryTolerance is how long after its TTL (or Deadline) a lease may take
	// to free the lock: 1.5s, for a round of backoff and scheduling under
	// -race on two cores.
	ExpiryTolerance = 1500 * time.Millisecond
	// PromptCancel is how soon Acquire must return once its context is done:
	// 1s.
	PromptCancel = time.Second
	// DownLimit is how soon a call must fail when the server is down: 5s.
	DownLimit = 5 * time.Second
	// NoQuorumLimit is how soon a quorum strategy's Acquire must fail with a
	// majority of its nodes down: 1s (redlock's per-node timeout is 50ms).
	NoQuorumLimit = time.Second
	// RecoverLimit is how soon a strategy object must work again after its
	// server is restarted: 20s. A session client's reconnect may have sent
	// its handshake to the server while it was still starting, and waits
	// for the answer up to its session timeout before it tries again
	// (kazoo: session timeout ÷ hosts, LongTTL here): CI once saw py-kazoo
	// still failing 10s after a restart on a loaded machine, 1.3s at most
	// in three quiet runs.
	RecoverLimit = 2 * LongTTL

	caseAcquireTimeout = 3 * time.Second  // Config.AcquireTimeout of every case
	openTimeout        = 10 * time.Second // strategies.New while servers are up
	acquireTimeout     = time.Minute      // one contender's AcquireRetry, even when starved
	restartTimeout     = 60 * time.Second // starting the killed servers again
	probeWait          = 200 * time.Millisecond
)

// expiryTolerance returns how long after ShortTTL a lock of the strategy
// may take to free: ExpiryTolerance, plus what the server adds to the lease
// it grants (Info.Lease: etcd raises any lease to its minimum, 2s with
// default settings, so its locks are free 1.5s later than ShortTTL says).
func (h *harness) expiryTolerance() time.Duration {
	return ExpiryTolerance + max(0, h.info.LeaseTTL(ShortTTL)-ShortTTL)
}

// acquire takes the lock with retries (blocking strategies wait), failing the
// test if it cannot within acquireTimeout.
func acquire(t T, s strategies.Strategy, key string) strategies.Lease {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), acquireTimeout)
	defer cancel()
	l, _, err := strategies.AcquireRetry(ctx, s, key, strategies.Retry{})
	if err != nil {
		t.Fatalf("acquire %s: got %v; want a lease", key, err)
	}
	return l
}

// release releases l, failing the test on any error.
func release(t T, l strategies.Lease) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), acquireTimeout)
	defer cancel()
	if err := l.Release(ctx); err != nil {
		t.Errorf("release %s: got %v; want nil", l.Key(), err)
	}
}

// held checks that s cannot take key now: a non-blocking strategy's one
// attempt returns ErrNotAcquired, a blocking one is still waiting after
// probeWait. It returns a description of what happened otherwise.
func held(s strategies.Strategy, key string) error {
	ctx, cancel := context.WithTimeout(context.Background(), probeWait)
	defer cancel()
	l, err := s.Acquire(ctx, key)
	if l != nil {
		_ = l.Release(context.Background())
		return errors.New("another contender took the lock")
	}
	if !strategies.Blocks(s) && !errors.Is(err, strategies.ErrNotAcquired) {
		return fmt.Errorf("one attempt returned %v, want ErrNotAcquired", err)
	}
	if err == nil {
		return errors.New("Acquire returned neither a lease nor an error")
	}
	return nil
}

// within calls fn with a context that is cancelled once limit has passed, and
// reports how long fn took and whether it returned within limit. When it did
// not, fn is left running (its context cancelled) and the caller must not
// touch what fn writes.
func within(limit time.Duration, fn func(ctx context.Context)) (time.Duration, bool) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	start := time.Now()
	go func() {
		defer close(done)
		fn(ctx)
	}()
	timer := time.NewTimer(limit)
	defer timer.Stop()
	select {
	case <-done:
		return time.Since(start), true
	case <-timer.C:
		return time.Since(start), false
	}
}
