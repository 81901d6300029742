package redisutil

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// Client defaults. They are short on purpose: a lock server that does not
// answer within a second is down as far as a payment is concerned, and the
// benchmark must report that rather than hang.
const (
	// DefaultDialTimeout bounds one connection attempt: 1s.
	DefaultDialTimeout = time.Second
	// DefaultIOTimeout bounds each socket read and write: 1s.
	DefaultIOTimeout = time.Second
	// DefaultPoolTimeout bounds the wait for a free pooled connection: 1s.
	DefaultPoolTimeout = time.Second
	// DefaultPoolSize is the connection pool size per node: 256, so that many
	// concurrent workers never queue on the client (the harness must not be
	// the bottleneck).
	DefaultPoolSize = 256
	// DefaultMinIdleConns is how many connections a client opens up front: 8.
	DefaultMinIdleConns = 8
	// DefaultPingTimeout bounds the connectivity check in Dial: 2s.
	DefaultPingTimeout = 2 * time.Second
)

// Options returns client options for one Redis node at addr.
func Options(addr, password string) *redis.Options {
	return &redis.Options{
		Addr:         addr,
		Password:     password,
		DialTimeout:  DefaultDialTimeout,
		ReadTimeout:  DefaultIOTimeout,
		WriteTimeout: DefaultIOTimeout,
		PoolTimeout:  DefaultPoolTimeout,
		PoolSize:     DefaultPoolSize,
		// Open a few connections up front, so a run does not start with a
		// dial storm (Redlock: every worker × every node) that times rounds
		// out.
		MinIdleConns: DefaultMinIdleConns,
		// No retries: see the package comment. DialerRetries 1 is a single
		// attempt (0 would mean go-redis' default of 5).
		MaxRetries:    -1,
		DialerRetries: 1,
		// Apply ctx deadlines to socket I/O, so per-call timeouts hold.
		ContextTimeoutEnabled: true,
		// Keep the handshake to HELLO: no CLIENT SETINFO, no maintenance
		// notifications (not offered by a local redis-server anyway).
		DisableIdentity: true,
		// RESP2: with RESP3, go-redis peeks the socket for push
		// notifications before every command, an extra syscall each time
		// (about 12% of a lock cycle's CPU here). Locks need no pushes.
		Protocol:                 2,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
	}
}

// Dial returns a client for the node at addr after checking that it answers
// PING within DefaultPingTimeout, and loads scripts into the node's script
// cache so the first EVALSHA finds them. On failure it closes the client and
// returns an error that wraps strategies.ErrUnavailable when the node is
// unreachable.
func Dial(ctx context.Context, addr, password string, scripts ...*redis.Script) (*redis.Client, error) {
	c := redis.NewClient(Options(addr, password))
	pctx, cancel := context.WithTimeout(ctx, DefaultPingTimeout)
	defer cancel()
	err := c.Ping(pctx).Err()
	for _, s := range scripts {
		if err != nil {
			break
		}
		err = s.Load(pctx, c).Err()
	}
	if err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("connect: %w", Classify(ctx, addr, err))
	}
	return c, nil
}
