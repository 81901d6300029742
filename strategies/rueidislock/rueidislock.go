package rueidislock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"
	rlock "github.com/redis/rueidis/rueidislock"

	"github.com/lockbench/lockbench/strategies"
	"github.com/lockbench/lockbench/strategies/redisutil"
)

// The library's defaults this package relies on (rueidislock/lock.go,
// NewLocker). They are not set here, only stated: NewLocker applies them.
const (
	// KeyValidity is how long each key lives without a renewal: 5s.
	KeyValidity = 5 * time.Second
	// ExtendInterval is how often the library renews a held key, to
	// KeyValidity from then: KeyValidity/2, 2.5s.
	ExtendInterval = KeyValidity / 2
	// KeyMajority is how many of the 2×KeyMajority−1 = 3 keys make a lock: 2.
	KeyMajority = 2
)

// DownCheckEvery is how often an Acquire that is still waiting for the lock
// asks the server whether it is there (PING, within
// redisutil.DefaultPingTimeout): 1s. WithContext itself never gives up while
// its context lives, and with the server down it waits for a notification
// that cannot come; the check turns that into an error wrapping
// strategies.ErrUnavailable.
const DownCheckEvery = time.Second

func init() {
	strategies.Register(strategies.Info{
		Name:         "rueidislock",
		Order:        60,
		Color:        "#ee3377", // magenta (Tol vibrant)
		Description:  "redis/rueidis rueidislock at its defaults: 2 of 3 keys on one Redis, 5s validity renewed every 2.5s, waits by client-side caching; no fencing token",
		Need:         strategies.Need{Backend: strategies.BackendRedis, Nodes: 1},
		CrossProcess: true,
		KeepAlive:    true,
		// A holder that stops renewing keeps its keys for the library's
		// KeyValidity, whatever --ttl says.
		Lease: func(time.Duration) time.Duration { return KeyValidity },
		New:   strategies.FactoryOf(New),
	})
}

// Locker hands out rueidislock locks: one rueidislock.Locker, its own
// rueidis client, per strategy object.
type Locker struct {
	locker rlock.Locker
	gate   *gatedClient // the locker's client
	addr   string       // names the node in errors, never a password

	mu     sync.Mutex
	closed bool
}

var (
	_ strategies.Strategy = (*Locker)(nil)
	_ strategies.Blocker  = (*Locker)(nil)
)

// New connects to cfg.RedisAddrs[0], or to the primary the Sentinels of
// cfg.RedisSentinels name, with cfg's TLS and login (clientOption), checks
// that the server is recent enough (MinVersion) and returns the strategy.
// cfg.TTL is not used: the lease is the library's KeyValidity.
func New(ctx context.Context, cfg strategies.Config) (*Locker, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	cfg = cfg.WithDefaults()
	if cfg.RedisWait > 0 {
		return nil, errors.New("rueidislock: Config.RedisWait is not supported: the library sends its keys through its own client, with no WAIT")
	}
	opt, addr, err := clientOption(cfg)
	if err != nil {
		return nil, fmt.Errorf("rueidislock: %w", err)
	}
	// Every LockerOption but the client's at the library's defaults. The
	// builder is rueidis.NewClient's, behind a gate that Close shuts.
	var gate *gatedClient
	l, err := rlock.NewLocker(rlock.LockerOption{
		ClientOption: opt,
		ClientBuilder: func(o rueidis.ClientOption) (rueidis.Client, error) {
			c, err := rueidis.NewClient(o)
			if err != nil {
				return nil, err
			}
			gate = &gatedClient{Client: c}
			return gate, nil
		},
	})
	if err != nil {
		return nil, fmt.Errorf("rueidislock: connect: %w", classify(ctx, addr, err))
	}
	if err := checkVersion(ctx, l.Client(), addr); err != nil {
		l.Close()
		return nil, fmt.Errorf("rueidislock: %w", err)
	}
	return &Locker{locker: l, gate: gate, addr: addr}, nil
}

// Blocks reports true: WithContext waits for the lock.
func (s *Locker) Blocks() bool { return true }

// Acquire waits for the lock on key with the library's WithContext until it
// is granted or ctx is done (ctx's error), or the server stops answering
// (an error wrapping strategies.ErrUnavailable, DownCheckEvery). ctx bounds
// the wait only: WithContext gets a context without ctx's cancellation and
// deadline (see the package doc), which this call cancels if ctx ends or the
// server is found down first. WithContext runs in a goroutine of its own, as
// with the server gone it can outlive its context by up to KeyValidity:
// Acquire returns at once, and that goroutine gives up a lock granted late.
func (s *Locker) Acquire(ctx context.Context, key string) (strategies.Lease, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	start := time.Now()
	wait, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	a := &attempt{cancel: cancel, waiting: make(chan struct{})}
	stopCtx := context.AfterFunc(ctx, func() { a.abort(ctx.Err()) })
	check := time.AfterFunc(DownCheckEvery, func() { s.checkWhileWaiting(a) })
	granted := make(chan grant, 1)
	go func() {
		lctx, unlock, err := s.locker.WithContext(wait, key)
		granted <- grant{lctx, unlock, err}
	}()
	var g grant
	var got bool
	select {
	case g, got = <-granted:
	case <-wait.Done():
	}
	a.finish()
	stopCtx()
	check.Stop()
	if !got {
		go func() {
			if g := <-granted; g.err == nil {
				g.unlock() // its context is wait's child: being dropped already
			}
		}()
		return nil, s.acquireError(ctx, key, context.Cause(wait), context.Cause(wait))
	}
	if g.err == nil && context.Cause(wait) != nil {
		// Granted as the wait was given up: the library drops the keys
		// (the lock context is wait's child); not waited for, as above.
		go g.unlock()
		g.err = context.Canceled
	}
	if g.err != nil {
		cancel(nil)
		return nil, s.acquireError(ctx, key, context.Cause(wait), g.err)
	}
	// wait must stay live for as long as the lock: the lease cancels it
	// once released.
	return &lease{key: key, ctx: g.ctx, unlock: g.unlock, stop: cancel, deadline: start.Add(KeyValidity)}, nil
}

// grant is what WithContext returned.
type grant struct {
	ctx    context.Context
	unlock context.CancelFunc
	err    error
}

// acquireError explains why WithContext returned err: the caller gave up
// (ctx's error), the server is down (cause), or the locker was closed.
func (s *Locker) acquireError(ctx context.Context, key string, cause, err error) error {
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case cause != nil && !errors.Is(cause, context.Canceled):
		return fmt.Errorf("rueidislock: acquire %s: %w", key, cause)
	case errors.Is(err, rlock.ErrLockerClosed):
		return fmt.Errorf("rueidislock: acquire %s: %w", key, errClosed)
	}
	return fmt.Errorf("rueidislock: acquire %s: %w", key, classify(ctx, s.addr, err))
}

// attempt is one Acquire's wait. Its wait context is cancelled, by the
// caller's context or the down check, only while WithContext runs: once
// finish has returned, nothing cancels it, so a lock granted by then is
// not dropped behind its holder's back.
type attempt struct {
	mu      sync.Mutex
	done    bool
	cancel  context.CancelCauseFunc
	waiting chan struct{} // closed by finish
}

// abort cancels the wait with cause, unless it is over.
func (a *attempt) abort(cause error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.done {
		a.cancel(cause)
	}
}

// finish ends the wait; abort does nothing after it.
func (a *attempt) finish() {
	a.mu.Lock()
	a.done = true
	close(a.waiting)
	a.mu.Unlock()
}

// checkWhileWaiting pings the server every DownCheckEvery while a is
// waiting, and aborts a, with an error wrapping strategies.ErrUnavailable,
// at the first ping that fails.
func (s *Locker) checkWhileWaiting(a *attempt) {
	c := s.locker.Client()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), redisutil.DefaultPingTimeout)
		err := c.Do(ctx, c.B().Ping().Build()).Error()
		cancel()
		if err != nil {
			a.abort(fmt.Errorf("server check while waiting: %w", classify(nil, s.addr, err)))
			return
		}
		select {
		case <-a.waiting:
			return
		case <-time.After(DownCheckEvery):
		}
	}
}

// Close shuts the client's gate, then closes the locker. Leases still held
// are not released: their keys expire after KeyValidity, as a stopped
// holder's do. The gate comes first because the library's Close cancels every
// held lock, and deletes that get through while the client closes would free
// them at once (see the package's Caveats).
func (s *Locker) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	s.gate.closed.Store(true)
	s.locker.Close()
	return nil
}

// gatedClient is the locker's rueidis client with a gate: once closed, Do
// fails with rueidis.ErrClosing without reaching the server. The library
// sends every command through Do (its scripts' Exec).
type gatedClient struct {
	rueidis.Client
	closed atomic.Bool
}

func (c *gatedClient) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	if c.closed.Load() {
		return rueidis.NewErrorResult(rueidis.ErrClosing)
	}
	return c.Client.Do(ctx, cmd)
}

// errClosed is returned by Acquire on a closed Locker.
var errClosed = errors.New("rueidislock: strategy closed")
