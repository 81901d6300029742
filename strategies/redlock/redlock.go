package redlock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockbench/lockbench/strategies"
	"github.com/lockbench/lockbench/strategies/redisutil"
)

// Defaults and constants of the algorithm.
const (
	// DefaultNodes is the number of nodes redlock is registered with: 5.
	DefaultNodes = 5
	// DefaultNodeTimeout bounds each node's SET NX: 50ms, or TTL/10 when that
	// is smaller, but never below MinNodeTimeout. It must be small against the
	// TTL, or a slow node eats the validity.
	DefaultNodeTimeout = 50 * time.Millisecond
	// MinNodeTimeout is the floor of the per-node timeout: 5ms.
	MinNodeTimeout = 5 * time.Millisecond
	// DriftFactor is the clock drift allowance per unit of TTL: 1%.
	DriftFactor = 0.01
	// DriftConstant is added to the drift allowance: 2ms, for the
	// millisecond resolution of Redis expiry (redsync, the Redlock spec).
	DriftConstant = 2 * time.Millisecond
)

func init() {
	strategies.Register(strategies.Info{
		Name:         "redlock",
		Order:        80,
		Color:        "#e69f00", // orange
		Description:  "Redlock over N Redis masters (default 5): parallel SET NX, quorum N/2+1, drift allowance",
		Need:         strategies.Need{Backend: strategies.BackendRedis, Nodes: DefaultNodes},
		CrossProcess: true,
		// Nothing reads a call's context once the call has returned.
		KeepsNoContext: true,
		New:            strategies.FactoryOf(New),
	})
}

// Redlock locks keys on a quorum of independent Redis nodes.
type Redlock struct {
	clients     []*redis.Client
	addrs       []string
	ttl         time.Duration
	drift       time.Duration
	nodeTimeout time.Duration
	quorum      int
	owner       string
}

var _ strategies.Strategy = (*Redlock)(nil)

// New connects to every node of cfg.RedisAddrs (servers.Target trims a
// config to the nodes a strategy's Need names) and loads the release and
// extend scripts on each. It fails unless a quorum of them answers within
// redisutil.DefaultPingTimeout; the others may come up later.
func New(ctx context.Context, cfg strategies.Config) (*Redlock, error) {
	cfg = cfg.WithDefaults()
	addrs := cfg.RedisAddrs
	ttl := cfg.TTL.Truncate(time.Millisecond)
	if len(addrs) == 0 || ttl <= 0 {
		return nil, fmt.Errorf("redlock: need Redis addresses and a TTL of at least 1ms (got %d, %v)", len(addrs), cfg.TTL)
	}
	clients, names, err := redisutil.NewClients(cfg)
	if err != nil {
		return nil, fmt.Errorf("redlock: %w", err)
	}
	r := &Redlock{
		clients:     clients,
		addrs:       names,
		ttl:         ttl,
		drift:       drift(ttl),
		nodeTimeout: max(min(DefaultNodeTimeout, ttl/10), MinNodeTimeout),
		quorum:      len(addrs)/2 + 1,
		owner:       cfg.Owner,
	}
	pctx, cancel := context.WithTimeout(ctx, redisutil.DefaultPingTimeout)
	defer cancel()
	errs := r.each(pctx, 0, func(ctx context.Context, _ int, c *redis.Client) error {
		if err := c.Ping(ctx).Err(); err != nil {
			return err
		}
		if err := redisutil.ReleaseScript.Load(ctx, c).Err(); err != nil {
			return err
		}
		return redisutil.ExtendScript.Load(ctx, c).Err()
	})
	if up := len(addrs) - countErrs(errs); up < r.quorum {
		_ = r.Close()
		if err := redisutil.FirstRefusal(errs); err != nil {
			return nil, fmt.Errorf("redlock: %w", err)
		}
		return nil, fmt.Errorf("%w: redlock: only %d of %d nodes answer, quorum is %d: %w",
			strategies.ErrUnavailable, up, len(addrs), r.quorum, errors.Join(errs...))
	}
	return r, nil
}

// drift is the clock drift allowance for a lock of ttl: ttl×DriftFactor +
// DriftConstant.
func drift(ttl time.Duration) time.Duration {
	return time.Duration(float64(ttl)*DriftFactor) + DriftConstant
}

// each runs fn on every node in parallel, each call bounded by timeout (none
// when 0), and returns each node's error (nil on success) as a *NodeError.
// Transport failures and timeouts wrap strategies.ErrUnavailable.
func (r *Redlock) each(ctx context.Context, timeout time.Duration, fn func(ctx context.Context, node int, c *redis.Client) error) []error {
	// One deadline serves every node: the calls start together.
	nctx := ctx
	if timeout > 0 {
		var cancel context.CancelFunc
		nctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	errs := make([]error, len(r.clients))
	var wg sync.WaitGroup
	for i, c := range r.clients {
		wg.Go(func() {
			if err := fn(nctx, i, c); err != nil {
				if !errors.Is(err, errTaken) && !errors.Is(err, strategies.ErrNotOwner) {
					// ctx, not nctx: a per-node timeout is the node's failure.
					err = redisutil.Classify(ctx, r.addrs[i], err)
				}
				errs[i] = &NodeError{Node: i, Addr: r.addrs[i], Err: err}
			}
		})
	}
	wg.Wait()
	return errs
}

// Acquire makes one Redlock round. It returns an error wrapping
// strategies.ErrUnavailable when so many nodes are down (refusing or dropping
// connections, erring) that no quorum is possible, and
// strategies.ErrNotAcquired for any other failed round: the lock is held,
// contenders split the votes, nodes were too slow to answer within the
// per-node timeout, or no validity was left. Redlock's answer to those is to
// retry after a random delay (strategies.AcquireRetry); a slow node may just
// be a cold connection pool.
func (r *Redlock) Acquire(ctx context.Context, key string) (strategies.Lease, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	value, rkey := redisutil.OwnerValue(r.owner), redisutil.LockKey(key)
	start := time.Now()
	votes := r.each(ctx, r.nodeTimeout, func(ctx context.Context, _ int, c *redis.Client) error {
		ok, err := c.SetNX(ctx, rkey, value, r.ttl).Result()
		if err == nil && !ok {
			err = errTaken
		}
		return err
	})
	validity := r.ttl - time.Since(start) - r.drift
	var granted, slow int
	var down []error
	for _, err := range votes {
		switch {
		case err == nil:
			granted++
		case errors.Is(err, errTaken):
		case redisutil.IsTimeout(err):
			slow++
		default:
			down = append(down, err)
		}
	}
	if granted >= r.quorum && validity > 0 {
		// start + validity: conservative by the round's duration (redsync
		// counts the validity from the end of the round), since every key
		// was set after start.
		l := &lease{r: r, key: key, value: value}
		l.deadline.Set(start.Add(validity))
		return l, nil
	}
	// Undo wherever our value may be: on the nodes that granted, and on those
	// that failed or timed out, where the SET may have landed after all. A
	// node that answered "held" holds someone else's value; asking it again
	// would only add load while contenders poll. The caller's ctx may be
	// done; the undo must run all the same.
	r.each(context.WithoutCancel(ctx), r.nodeTimeout, func(ctx context.Context, i int, c *redis.Client) error {
		if errors.Is(votes[i], errTaken) {
			return nil
		}
		return release(ctx, c, rkey, value)
	})
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(down) > len(r.clients)-r.quorum {
		return nil, fmt.Errorf("%w: redlock: acquire %s: %d of %d nodes failed, quorum is %d: %w",
			strategies.ErrUnavailable, key, len(down), len(r.clients), r.quorum, errors.Join(down...))
	}
	return nil, fmt.Errorf("%w: redlock: %s: %d of %d nodes granted, %d timed out (quorum %d), validity left %v",
		strategies.ErrNotAcquired, key, granted, len(r.clients), slow, r.quorum, validity)
}

// Close closes the connections to every node. Locks still held expire by
// their TTL.
func (r *Redlock) Close() error {
	var errs []error
	for _, c := range r.clients {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}

// release compare-and-deletes rkey on c if it holds value, and returns
// strategies.ErrNotOwner where it does not.
func release(ctx context.Context, c *redis.Client, rkey, value string) error {
	n, err := redisutil.ReleaseScript.Run(ctx, c, []string{rkey}, value).Int64()
	if err == nil && n == 0 {
		err = strategies.ErrNotOwner
	}
	return err
}
