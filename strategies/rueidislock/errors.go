package rueidislock

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/redis/rueidis"

	"github.com/lockbench/lockbench/strategies"
	"github.com/lockbench/lockbench/strategies/redisutil"
)

// classify turns an error of the rueidis client talking to the node at addr
// into what the strategies report, as redisutil.Classify does for go-redis,
// whose reply errors rueidis' do not match; nil for a nil err, and ctx may be
// nil. rueidis.ErrNoCache (no HELLO 3 or CLIENT TRACKING) is reported in one
// line as a misconfiguration; a "not serving right now" reply (LOADING,
// MASTERDOWN, TRYAGAIN, CLUSTERDOWN, READONLY, max clients) wraps
// strategies.ErrUnavailable, and any other reply (WRONGPASS, NOPERM) is
// wrapped as is; the rest (ctx done, transport failures, rueidis.ErrClosing,
// also returned when rueidis cannot connect) goes to redisutil.Classify.
func classify(ctx context.Context, addr string, err error) error {
	if err == nil {
		return nil
	}
	if ctx != nil && ctx.Err() != nil {
		return redisutil.Classify(ctx, addr, err)
	}
	if errors.Is(err, rueidis.ErrNoCache) {
		// rueidis' own message advises DisableCache, which rueidislock's
		// waiting needs: the server's reply, when there is one, says more.
		reply := ""
		if line := firstLine(err); line != rueidis.ErrNoCache.Error() {
			reply = ": " + line
		}
		return fmt.Errorf("redis %s does not offer RESP3 with client tracking, which rueidislock's client-side caching needs: Redis 6.0 or later (%s or later at the library's defaults)%s",
			addr, MinVersion, reply)
	}
	var reply *rueidis.RedisError
	if errors.As(err, &reply) {
		if transient(reply.Error()) {
			return fmt.Errorf("%w: redis %s: %w", strategies.ErrUnavailable, addr, err)
		}
		return fmt.Errorf("redis %s: %w", addr, err)
	}
	return redisutil.Classify(ctx, addr, err)
}

// transient reports whether an error reply means the node cannot serve the
// request now but might later.
func transient(msg string) bool {
	for _, p := range []string{"LOADING", "MASTERDOWN", "TRYAGAIN", "CLUSTERDOWN", "READONLY", "ERR max number of clients"} {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}

// firstLine is err's message up to its first line break: rueidis puts the
// server's reply and ErrNoCache's advice on lines of their own.
func firstLine(err error) string {
	msg, _, _ := strings.Cut(err.Error(), "\n")
	return msg
}
