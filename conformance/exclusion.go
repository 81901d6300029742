package conformance

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
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

// Contention is what Contend saw.
type Contention struct {
	// Entries counts critical sections entered; Overlaps those entered
	// with another contender inside; MaxInside the most inside at once.
	Entries, Overlaps, MaxInside int64
	// Tokens are the holders' fencing tokens in critical-section order.
	Tokens []int64
	// Errs are the acquires and releases that failed.
	Errs []error
	// Took is how long the contention lasted.
	Took time.Duration
}

// Contend has one goroutine per element of objects (an object may appear
// more than once: contenders sharing an instance) take the lock on key
// rounds times each, all starting at once, with AcquireRetry bounded by
// acquireTimeout per attempt; each counts itself in and out of the
// critical section, where it stays for Hold. The exclusion cases run on it;
// a strategy's own tests may too.
func Contend(objects []strategies.Strategy, key string, rounds int, acquireTimeout time.Duration) Contention {
	var (
		inside, maxInside, overlaps, entries atomic.Int64
		mu                                   sync.Mutex
		c                                    Contention
		wg                                   sync.WaitGroup
	)
	fail := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		c.Errs = append(c.Errs, err)
	}
	start := make(chan struct{})
	for i, s := range objects {
		wg.Go(func() {
			<-start // everyone at once: contention from the first round
			for round := range rounds {
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
				c.Tokens = append(c.Tokens, l.Token())
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
	c.Took = time.Since(began)
	c.Entries, c.Overlaps, c.MaxInside = entries.Load(), overlaps.Load(), maxInside.Load()
	return c
}

// IncreasingTokens reports the first holder whose token is not larger than
// its predecessor's, or nil.
func (c Contention) IncreasingTokens() error {
	for i := 1; i < len(c.Tokens); i++ {
		if c.Tokens[i] <= c.Tokens[i-1] {
			return fmt.Errorf("holder %d: got token %d after %d; want strictly increasing tokens", i, c.Tokens[i], c.Tokens[i-1])
		}
	}
	return nil
}

// testExclusion has Contenders goroutines take the lock on one key Rounds
// times each (Contend) and checks that nobody ever found another contender
// inside. perContender gives each goroutine its own strategy object instead
// of one shared object.
func testExclusion(t T, h *harness, perContender bool) {
	key := h.key(t)
	objects := make([]strategies.Strategy, Contenders)
	// Each object is told how many contenders call it at once, as an
	// instance is told its workers.
	workers := Contenders
	if perContender {
		workers = 1
	}
	for i := range objects {
		if i == 0 || perContender {
			objects[i] = h.openFor(t, LongTTL, fmt.Sprintf("contender-%d", i), workers)
		} else {
			objects[i] = objects[0]
		}
	}
	c := Contend(objects, key, Rounds, acquireTimeout)
	t.Logf("%d entries by %d contenders in %v; %d overlapping, at most %d inside at once",
		c.Entries, Contenders, c.Took.Round(time.Millisecond), c.Overlaps, c.MaxInside)

	for _, err := range c.Errs {
		t.Errorf("got %v; want every contender to get the lock within %v", err, acquireTimeout)
	}
	expectOverlap := h.control() || (perContender && !h.info.CrossProcess)
	switch {
	case expectOverlap && c.Overlaps == 0:
		t.Errorf("got no overlap; want the checker to catch %s letting contenders in together (it excludes nobody here)", h.info.Name)
	case expectOverlap:
		t.Logf("overlap expected and caught: %s does not exclude contenders here", h.info.Name)
	case c.Overlaps > 0:
		t.Errorf("got %d overlapping entries, up to %d holders at once; want at most 1 holder", c.Overlaps, c.MaxInside)
	}
	if h.info.Fencing && !expectOverlap {
		if err := c.IncreasingTokens(); err != nil {
			t.Error(err)
		}
	}
}
