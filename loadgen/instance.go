package loadgen

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockbench/lockbench/loadgen/store"
	"github.com/lockbench/lockbench/results"
	"github.com/lockbench/lockbench/strategies"
)

// InstanceConfig is what one instance (app server) is built from. It is
// JSON-encoded to start an instance process.
type InstanceConfig struct {
	ID       int
	Strategy string
	Scenario Scenario
	Lock     strategies.Config
}

// Instance is one app server: its own strategy object (so a mutex excludes
// only its own workers, as in production) and --workers workers taking
// deliveries from one queue.
type Instance struct {
	cfg      InstanceConfig
	strategy strategies.Strategy
	store    store.Accessor
	queue    chan Delivery
	workers  []*worker
	wg       sync.WaitGroup
	stopOnce sync.Once
	stopErr  error
	// slowOnce, when > 0, is the hold (ns) of the next critical section
	// entered: the `slow` fault.
	slowOnce atomic.Int64
}

// NewInstance builds an instance's strategy and starts its workers.
func NewInstance(ctx context.Context, cfg InstanceConfig, acc store.Accessor) (*Instance, error) {
	lock := cfg.Lock
	lock.Owner = fmt.Sprintf("instance-%d", cfg.ID)
	lock.TTL = cfg.Scenario.TTL
	s, err := strategies.New(ctx, cfg.Strategy, lock)
	if err != nil {
		return nil, err
	}
	in := &Instance{cfg: cfg, strategy: s, store: acc, queue: make(chan Delivery, cfg.Scenario.Workers)}
	for i := range cfg.Scenario.Workers {
		seed := uint64(cfg.Scenario.Seed)*1_000_003 + uint64(cfg.ID)*4099 + uint64(i)
		in.workers = append(in.workers, &worker{inst: in, rec: results.NewRecorder(), rng: rand.New(rand.NewPCG(seed, 7))})
	}
	return in, nil
}

// Start runs the workers until the queue is closed by Stop.
func (in *Instance) Start(ctx context.Context) {
	for _, w := range in.workers {
		in.wg.Add(1)
		go func() {
			defer in.wg.Done()
			// The worker's own child of ctx, so the per-call contexts
			// derived from it every cycle register with this worker's
			// context, not all with ctx under one mutex; and their parent
			// for calls that must finish even when ctx is done, made once.
			wctx, cancel := context.WithCancel(ctx)
			defer cancel()
			cx := cycleCtx{run: wctx, detached: context.WithoutCancel(wctx)}
			for d := range in.queue {
				w.process(cx, d)
			}
		}()
	}
}

// Deliver queues d, blocking while every worker is busy and the queue full.
func (in *Instance) Deliver(ctx context.Context, d Delivery) error {
	select {
	case in.queue <- d:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Stop closes the queue, waits for the workers to finish what they hold,
// and closes the strategy.
// Stopping twice is harmless.
func (in *Instance) Stop() error {
	in.stopOnce.Do(func() {
		close(in.queue)
		in.wg.Wait()
		in.stopErr = in.strategy.Close()
	})
	return in.stopErr
}

// Slow makes the next critical section entered by this instance take d.
func (in *Instance) Slow(d time.Duration) { in.slowOnce.Store(int64(d)) }

// Swap collects what the workers recorded since the last Swap, merged.
func (in *Instance) Swap(into results.PhaseSet) {
	for _, w := range in.workers {
		w.rec.Drain(into)
	}
}

// Counts sums the workers' counters.
func (in *Instance) Counts() Snapshot {
	var s Snapshot
	for _, w := range in.workers {
		s.Add(w.c.Snapshot())
	}
	return s
}
