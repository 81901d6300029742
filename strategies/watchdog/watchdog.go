package watchdog

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/lockbench/lockbench/strategies"
	"github.com/lockbench/lockbench/strategies/setnx"
)

// PeriodDivisor sets the renewal period: the TTL divided by 3, Redisson's
// (internalLockLeaseTime / 3).
const PeriodDivisor = 3

func init() {
	strategies.Register(strategies.Info{
		Name:         "setnx-watchdog",
		Order:        50,
		Color:        "#88ccee", // cyan (Tol)
		Description:  "setnx whose lease a background watchdog renews every TTL/3 while held (Redisson's default); no fencing token",
		Need:         strategies.Need{Backend: strategies.BackendRedis, Nodes: 1},
		CrossProcess: true,
		KeepAlive:    true,
		// Nothing reads a call's context once the call has returned.
		KeepsNoContext: true,
		New:            strategies.FactoryOf(New),
	})
}

// Watchdog wraps a strategy whose leases implement strategies.Extender and
// renews every lease it hands out until it is released.
type Watchdog struct {
	inner  strategies.Strategy
	ttl    time.Duration
	period time.Duration

	mu     sync.Mutex
	active map[*lease]struct{}
	closed bool
}

var _ strategies.Strategy = (*Watchdog)(nil)

// New connects a setnx strategy (setnx.New) with cfg, after
// Config.WithDefaults, and wraps it with a watchdog that extends each lease
// to cfg.TTL: the strategy registered as setnx-watchdog.
func New(ctx context.Context, cfg strategies.Config) (*Watchdog, error) {
	cfg = cfg.WithDefaults()
	s, err := setnx.New(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return Wrap(s, cfg.TTL), nil
}

// Wrap returns inner with a watchdog that extends each lease to ttl every
// ttl/PeriodDivisor.
func Wrap(inner strategies.Strategy, ttl time.Duration) *Watchdog {
	return &Watchdog{inner: inner, ttl: ttl, period: ttl / PeriodDivisor, active: map[*lease]struct{}{}}
}

// ErrNotExtendable is returned by Acquire when the inner strategy's lease
// cannot be renewed.
var ErrNotExtendable = errors.New("watchdog: the strategy's leases do not implement strategies.Extender")

// Acquire takes the lock from the inner strategy and starts its watchdog.
func (w *Watchdog) Acquire(ctx context.Context, key string) (strategies.Lease, error) {
	l, err := w.inner.Acquire(ctx, key)
	if err != nil {
		return nil, err
	}
	ext, ok := l.(strategies.Extender)
	if !ok {
		_ = l.Release(context.WithoutCancel(ctx))
		return nil, ErrNotExtendable
	}
	wl := &lease{Lease: l, ext: ext, w: w, stop: make(chan struct{}), done: make(chan struct{})}
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		_ = l.Release(context.WithoutCancel(ctx))
		return nil, errors.New("watchdog: strategy closed")
	}
	w.active[wl] = struct{}{}
	w.mu.Unlock()
	go wl.watch()
	return wl, nil
}

// Blocks passes the inner strategy's Blocker through.
func (w *Watchdog) Blocks() bool { return strategies.Blocks(w.inner) }

// Close stops every watchdog (the leases still held then expire by their
// TTL, as a holder that stops does) and closes the inner strategy.
func (w *Watchdog) Close() error {
	w.mu.Lock()
	w.closed = true
	leases := make([]*lease, 0, len(w.active))
	for l := range w.active {
		leases = append(leases, l)
	}
	w.mu.Unlock()
	for _, l := range leases {
		l.halt()
	}
	return w.inner.Close()
}

// lease is a lease with its watchdog.
type lease struct {
	strategies.Lease
	ext  strategies.Extender
	w    *Watchdog
	once sync.Once
	stop chan struct{} // closed to stop the watchdog
	done chan struct{} // closed when the watchdog has stopped
}

var _ strategies.Lease = (*lease)(nil)

// watch renews the lease every period until it is stopped or the lease is
// lost (renew).
func (l *lease) watch() {
	defer close(l.done)
	t := time.NewTicker(l.w.period)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
		}
		if !l.renew() {
			return // lost, or unreachable for its whole validity: it lapses
		}
	}
}

// RetryDivisor sets the pause between attempts of a renewal that failed:
// the TTL divided by 20 (Redisson's retryInterval, 1.5 s, of its 30 s
// watchdog timeout).
const RetryDivisor = 20

// renew extends the lease once, and reports whether it still holds it. An
// attempt is bounded by one period, so a renewal stuck on a stalled
// connection cannot outlive the lease unnoticed. A failed or timed-out
// attempt is tried again after a pause while the lease is still valid by its
// own deadline, as Redisson does; a refusal (strategies.ErrNotOwner) ends the
// watch at once.
func (l *lease) renew() bool {
	for {
		left := time.Until(l.Deadline())
		if left <= 0 {
			return false
		}
		ctx, cancel := context.WithTimeout(context.Background(), min(l.w.period, left))
		err := l.ext.Extend(ctx, l.w.ttl)
		cancel()
		switch {
		case err == nil:
			return true
		case errors.Is(err, strategies.ErrNotOwner):
			return false
		}
		select {
		case <-l.stop:
			return false
		case <-time.After(l.w.ttl / RetryDivisor):
		}
	}
}

// halt stops the watchdog and waits until it has, once.
func (l *lease) halt() {
	l.once.Do(func() { close(l.stop) })
	<-l.done
	l.w.mu.Lock()
	delete(l.w.active, l)
	l.w.mu.Unlock()
}

// Release stops the watchdog, then releases the lock; it returns
// strategies.ErrNotOwner when a failed renewal let the lock go.
func (l *lease) Release(ctx context.Context) error {
	l.halt()
	return l.Lease.Release(ctx)
}
