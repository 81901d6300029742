package conformance

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockbench/lockbench/strategies"
)

// The exclusion workload.
const (
	// Contenders is the number of concurrent contenders on one key: 32.
	Contenders = 32
	// Rounds is how many times each contender enters the critical section: 3.
	Rounds = 3
	// Hold is how long a contender stays in the critical section: 1ms.
	Hold = time.Millisecond
)

// testExclusion has Contenders goroutines take the lock on one key Rounds
// times each, count themselves in and out of the critical section, and
// checks that nobody ever found another contender inside. perContender gives
// each goroutine its own strategy object instead of one shared object.
func testExclusion(t *testing.T, h *harness, perContender bool) {
	key := h.key(t)
	objects := make([]strategies.Strategy, Contenders)
	for i := range objects {
		if i == 0 || perContender {
			objects[i] = h.open(t, LongTTL, fmt.Sprintf("contender-%d", i))
		} else {
			objects[i] = objects[0]
		}
	}

	var (
		inside, maxInside, overlaps, entries atomic.Int64
		mu                                   sync.Mutex
		tokens                               []int64 // in critical-section order
		errs                                 []error
		wg                                   sync.WaitGroup
	)
	fail := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		errs = append(errs, err)
	}
	start := make(chan struct{})
	for i, s := range objects {
		wg.Go(func() {
			<-start // everyone at once: contention from the first round
			for round := range Rounds {
				ctx, cancel := context.WithTimeout(context.Background(), acquireTimeout)
				l, _, err := strategies.AcquireRetry(ctx, s, key, strategies.Retry{})
				if err != nil {
					cancel()
					fail(fmt.Errorf("contender %d round %d: acquire: %w", i, round, err))
					return
				}
				n := inside.Add(1)
				if n > 1 {
					overlaps.Add(1)
				}
				for m := maxInside.Load(); n > m && !maxInside.CompareAndSwap(m, n); m = maxInside.Load() {
				}
				entries.Add(1)
				mu.Lock()
				tokens = append(tokens, l.Token())
				mu.Unlock()
				time.Sleep(Hold)
				inside.Add(-1)
				if err := l.Release(ctx); err != nil {
					fail(fmt.Errorf("contender %d round %d: release: %w", i, round, err))
				}
				cancel()
			}
		})
	}
	began := time.Now()
	close(start)
	wg.Wait()
	t.Logf("%d entries by %d contenders in %v; %d overlapping, at most %d inside at once",
		entries.Load(), Contenders, time.Since(began).Round(time.Millisecond), overlaps.Load(), maxInside.Load())

	for _, err := range errs {
		t.Errorf("got %v; want every contender to get the lock within %v", err, acquireTimeout)
	}
	expectOverlap := h.control() || (perContender && !h.info.CrossProcess)
	switch {
	case expectOverlap && overlaps.Load() == 0:
		t.Errorf("got no overlap; want the checker to catch %s letting contenders in together (it excludes nobody here)", h.info.Name)
	case expectOverlap:
		t.Logf("overlap expected and caught: %s does not exclude contenders here", h.info.Name)
	case overlaps.Load() > 0:
		t.Errorf("got %d overlapping entries, up to %d holders at once; want at most 1 holder", overlaps.Load(), maxInside.Load())
	}
	if h.info.Fencing && !expectOverlap {
		for i := 1; i < len(tokens); i++ {
			if tokens[i] <= tokens[i-1] {
				t.Errorf("holder %d: got token %d after %d; want strictly increasing tokens", i, tokens[i], tokens[i-1])
			}
		}
	}
}
