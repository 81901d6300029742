package conformance

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lockbench/lockbench/strategies"
)

func testServerDown(t T, h *harness) {
	key := h.key(t)
	s := h.open(t, LongTTL, "A")
	release(t, acquire(t, s, key)) // it worked while the servers were up

	restart := h.stop(t, h.nodes())
	// Acquire on an object built while the server was up. Its context has a
	// long deadline: the strategy's own timeouts must end the call.
	var (
		l   strategies.Lease
		err error
	)
	took, ok := within(DownLimit, func(ctx context.Context) {
		l, err = s.Acquire(ctx, key)
	})
	switch {
	case !ok:
		t.Errorf("Acquire with the server down: still running after %v; want an error within %v", took, DownLimit)
	case l != nil:
		t.Errorf("Acquire with the server down: got a lease; want an error")
	case !errors.Is(err, strategies.ErrUnavailable):
		t.Errorf("Acquire with the server down: got %v after %v; want an error wrapping ErrUnavailable", err, took)
	default:
		t.Logf("Acquire failed after %v: %v", took.Round(time.Millisecond), err)
	}

	// A new object: the factory checks connectivity. Its results are
	// variables of their own, as the Acquire above may still be running.
	var (
		fresh  strategies.Strategy
		newErr error
	)
	took, ok = within(DownLimit, func(ctx context.Context) {
		fresh, newErr = strategies.New(ctx, h.info.LookupName(), h.config(LongTTL, "B"))
	})
	switch {
	case !ok:
		t.Errorf("New with the server down: still running after %v; want an error within %v", took, DownLimit)
	case newErr == nil:
		_ = fresh.Close()
		t.Errorf("New with the server down: got a strategy; want an error")
	case fresh != nil:
		t.Errorf("New with the server down: got a non-nil Strategy (%T) with error %v; want nil with the error", fresh, newErr)
	case !errors.Is(newErr, strategies.ErrUnavailable):
		t.Errorf("New with the server down: got %v after %v; want an error wrapping ErrUnavailable", newErr, took)
	default:
		t.Logf("New failed after %v: %v", took.Round(time.Millisecond), newErr)
	}

	restart()
	// The object built before the outage works again, as it must for the
	// kill-node and restart-node faults, where instances outlive the outage.
	back := time.Now()
	if err := recovers(s, key); err != nil {
		t.Errorf("after the restart: the old strategy object %v; want it working within %v", err, RecoverLimit)
	} else {
		t.Logf("old object recovered %v after the restart", time.Since(back).Round(time.Millisecond))
	}
	release(t, acquire(t, h.open(t, LongTTL, "C"), key+"/fresh"))
}

// recovers tries s.Acquire on key until it succeeds, for up to RecoverLimit,
// and releases the lease.
func recovers(s strategies.Strategy, key string) error {
	ctx, cancel := context.WithTimeout(context.Background(), RecoverLimit)
	defer cancel()
	var last error
	for ctx.Err() == nil {
		actx, acancel := context.WithTimeout(ctx, 2*time.Second)
		l, err := s.Acquire(actx, key)
		acancel()
		if err == nil {
			return l.Release(ctx)
		}
		last = err
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("still failed: %w", last)
}

func testQuorum(t T, h *harness) {
	nodes := h.nodes()
	n := len(nodes)
	quorum := n/2 + 1
	for _, c := range []struct {
		name string
		down int
		ok   bool
	}{
		// The largest minority dead: a quorum still answers.
		{fmt.Sprintf("%d-of-%d-down", n-quorum, n), n - quorum, true},
		// One more: no quorum, and a prompt error rather than retries.
		{fmt.Sprintf("%d-of-%d-down", n-quorum+1, n), n - quorum + 1, false},
	} {
		t.Run(c.name, func(t T) {
			key := h.key(t)
			s := h.open(t, LongTTL, "A")
			restart := h.stop(t, nodes[:c.down])
			defer restart()
			if c.ok {
				release(t, acquire(t, s, key))
				// The factory accepts a quorum of live nodes.
				release(t, acquire(t, h.open(t, LongTTL, "B"), key+"/fresh"))
				return
			}
			var (
				l   strategies.Lease
				err error
			)
			// A blocking lock's library retries within the acquire's time
			// (node-redlock: 10 attempts 200ms apart) before it says there
			// is no quorum; it must say so within DownLimit.
			limit := NoQuorumLimit
			if strategies.Blocks(s) {
				limit = DownLimit
			}
			took, ok := within(limit, func(ctx context.Context) {
				l, err = s.Acquire(ctx, key)
			})
			switch {
			case !ok:
				t.Errorf("Acquire without a quorum: still running after %v; want an error within %v", took, limit)
			case l != nil:
				t.Errorf("Acquire without a quorum: got a lease; want an error")
			case !errors.Is(err, strategies.ErrUnavailable):
				t.Errorf("Acquire without a quorum: got %v after %v; want an error wrapping ErrUnavailable", err, took)
			default:
				t.Logf("Acquire failed after %v: %v", took.Round(time.Millisecond), err)
			}
		})
	}
}

// testTransactionDown checks a transactional strategy's factory, its only
// call that reaches the server: it fails within DownLimit with the database
// down, wrapping ErrUnavailable, and succeeds once it is back.
func testTransactionDown(t T, h *harness) {
	_ = h.open(t, LongTTL, "A") // it works while the server is up
	restart := h.stop(t, h.nodes())
	var (
		s   strategies.Strategy
		err error
	)
	took, ok := within(DownLimit, func(ctx context.Context) {
		s, err = strategies.New(ctx, h.info.LookupName(), h.config(LongTTL, "B"))
	})
	switch {
	case !ok:
		t.Errorf("New with the server down: still running after %v; want an error within %v", took, DownLimit)
	case err == nil:
		_ = s.Close()
		t.Errorf("New with the server down: got a strategy; want an error")
	case !errors.Is(err, strategies.ErrUnavailable):
		t.Errorf("New with the server down: got %v after %v; want an error wrapping ErrUnavailable", err, took)
	default:
		t.Logf("New failed after %v: %v", took.Round(time.Millisecond), err)
	}
	restart()
	_ = h.open(t, LongTTL, "C")
}
