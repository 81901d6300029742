package fencing

import (
	"context"

	"github.com/redis/go-redis/v9"

	"github.com/lockbench/lockbench/strategies"
	"github.com/lockbench/lockbench/strategies/redisutil"
)

func init() {
	strategies.Register(strategies.Info{
		Name:         "fencing",
		Order:        70,
		Color:        "#009e73", // bluish green
		Description:  "Redis SET NX PX + INCR token in one atomic Lua script; the store rejects stale tokens",
		Need:         strategies.Need{Backend: strategies.BackendRedis, Nodes: 1},
		Fencing:      true,
		CrossProcess: true,
		// Nothing reads a call's context once the call has returned.
		KeepsNoContext: true,
		New:            strategies.FactoryOf(New),
	})
}

// FenceKeyPrefix is prepended to a lock key to name its token counter. It
// differs from redisutil.KeyPrefix so that no lock key's counter can be
// another lock key's lock.
const FenceKeyPrefix = "fence:"

// acquireScript takes the lock on KEYS[1] for owner value ARGV[1] and ARGV[2]
// milliseconds and, only if it did, returns the next value of the counter
// KEYS[2]; it returns 0 when the lock is held. Both steps run atomically, so
// the token order is the lock order.
var acquireScript = redis.NewScript(`
if redis.call("SET", KEYS[1], ARGV[1], "NX", "PX", ARGV[2]) then
	return redis.call("INCR", KEYS[2])
end
return 0
`)

// Fencing locks keys on the first Redis node of Config.RedisAddrs and issues a
// fencing token with every lease.
type Fencing struct {
	redisutil.Node
}

var _ strategies.Strategy = (*Fencing)(nil)

// New connects to cfg.RedisAddrs[0], checks that it answers and loads the
// scripts. Locks live cfg.TTL (truncated to whole milliseconds).
func New(ctx context.Context, cfg strategies.Config) (*Fencing, error) {
	n, err := redisutil.DialNode(ctx, "fencing", cfg, acquireScript, redisutil.ReleaseScript, redisutil.ExtendScript)
	if err != nil {
		return nil, err
	}
	return &Fencing{Node: n}, nil
}

// Acquire runs the acquire script once (followed by WAIT when
// Config.RedisWait asks for it: redisutil.Node.Take). It returns
// strategies.ErrNotAcquired when the lock is held (or too few replicas
// acknowledged it) and an error wrapping strategies.ErrUnavailable when the
// node cannot be reached.
func (f *Fencing) Acquire(ctx context.Context, key string) (strategies.Lease, error) {
	l, err := f.Lock(ctx, "fencing", key, func(c redis.Cmdable, rkey, value string) (bool, int64, error) {
		token, err := acquireScript.Run(ctx, c, []string{rkey, FenceKeyPrefix + key}, value, f.TTL.Milliseconds()).Int64()
		return token != 0, token, err
	})
	if err != nil {
		return nil, err // not a typed nil in a non-nil interface
	}
	return l, nil
}

// Close closes the connections. Locks still held expire by their TTL.
func (f *Fencing) Close() error { return f.Client.Close() }
