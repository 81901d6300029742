package redsync

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	rs "github.com/go-redsync/redsync/v4"
	rsredis "github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"

	"github.com/lockbench/lockbench/strategies"
	"github.com/lockbench/lockbench/strategies/redisutil"
	"github.com/lockbench/lockbench/strategies/redlock"
)

func init() {
	strategies.Register(strategies.Info{
		Name:         "redsync",
		Order:        90,
		Color:        "#cc6677", // rose (Tol)
		Description:  "go-redsync/redsync v4 Redlock over N Redis masters (default 5), library defaults, one try per Acquire",
		Need:         strategies.Need{Backend: strategies.BackendRedis, Nodes: redlock.DefaultNodes},
		CrossProcess: true,
		New:          strategies.FactoryOf(New),
	})
}

// Redsync locks keys with redsync mutexes over independent Redis nodes.
type Redsync struct {
	rs      *rs.Redsync
	clients []*redis.Client
	addrs   []string
	ttl     time.Duration
	quorum  int
}

var _ strategies.Strategy = (*Redsync)(nil)

// New connects to every node of cfg.RedisAddrs. It fails unless a quorum of
// them answers PING within redisutil.DefaultPingTimeout; the others may come
// up later.
func New(ctx context.Context, cfg strategies.Config) (*Redsync, error) {
	cfg = cfg.WithDefaults()
	addrs := cfg.RedisAddrs
	ttl := cfg.TTL.Truncate(time.Millisecond)
	if len(addrs) == 0 || ttl <= 0 {
		return nil, fmt.Errorf("redsync: need Redis addresses and a TTL of at least 1ms (got %d, %v)", len(addrs), cfg.TTL)
	}
	clients, names, err := redisutil.NewClients(cfg)
	if err != nil {
		return nil, fmt.Errorf("redsync: %w", err)
	}
	r := &Redsync{
		clients: clients,
		addrs:   names,
		ttl:     ttl,
		quorum:  len(addrs)/2 + 1, // redsync's own quorum
	}
	pools := make([]rsredis.Pool, len(addrs))
	for i, c := range r.clients {
		pools[i] = goredis.NewPool(c)
	}
	r.rs = rs.New(pools...)

	pctx, cancel := context.WithTimeout(ctx, redisutil.DefaultPingTimeout)
	defer cancel()
	errs := make([]error, len(addrs))
	var wg sync.WaitGroup
	for i, c := range r.clients {
		wg.Go(func() { errs[i] = redisutil.Classify(ctx, names[i], c.Ping(pctx).Err()) })
	}
	wg.Wait()
	up := 0
	for _, err := range errs {
		if err == nil {
			up++
		}
	}
	if up < r.quorum {
		_ = r.Close()
		if err := redisutil.FirstRefusal(errs); err != nil {
			return nil, fmt.Errorf("redsync: %w", err)
		}
		return nil, fmt.Errorf("%w: redsync: only %d of %d nodes answer, quorum is %d: %w",
			strategies.ErrUnavailable, up, len(addrs), r.quorum, errors.Join(errs...))
	}
	return r, nil
}

// Acquire makes one redsync round (a Mutex with WithTries(1)). It returns
// strategies.ErrNotAcquired when the round failed but a quorum was
// possible, and an error wrapping strategies.ErrUnavailable when more than
// N−quorum nodes failed outright; see the package comment.
func (r *Redsync) Acquire(ctx context.Context, key string) (strategies.Lease, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m := r.rs.NewMutex(redisutil.LockKey(key), rs.WithExpiry(r.ttl), rs.WithTries(1))
	err := m.LockContext(ctx)
	if err == nil {
		return &lease{key: key, m: m, quorum: r.quorum, nodes: len(r.clients)}, nil
	}
	if cerr := ctx.Err(); cerr != nil {
		return nil, fmt.Errorf("redsync: acquire %s: %w (%v)", key, cerr, err)
	}
	var taken *rs.ErrTaken
	if errors.As(err, &taken) || errors.Is(err, rs.ErrFailed) {
		// Held on a quorum, or granted by all but with no validity left.
		return nil, fmt.Errorf("%w: redsync: %s: %w", strategies.ErrNotAcquired, key, err)
	}
	v := tally(err)
	if v.down > len(r.clients)-r.quorum {
		return nil, fmt.Errorf("%w: redsync: acquire %s: %d of %d nodes failed, quorum is %d: %w",
			strategies.ErrUnavailable, key, v.down, len(r.clients), r.quorum, err)
	}
	// A split vote, nodes too slow for the round's deadline, or both.
	return nil, fmt.Errorf("%w: redsync: %s: %d of %d nodes held by others, %d timed out, %d failed (quorum %d): %w",
		strategies.ErrNotAcquired, key, v.taken, len(r.clients), v.slow, v.down, r.quorum, err)
}

// Close closes the connections to every node. Locks still held expire by
// their TTL.
func (r *Redsync) Close() error {
	var errs []error
	for _, c := range r.clients {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}
