package redisutil

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/lockbench/lockbench/strategies"
)

// Classify turns an error from a call to the node at addr into what the
// strategies report, or nil for a nil err: ctx.Err() when the caller's ctx
// is done (the server is not to blame); strategies.ErrUnavailable for a
// "not serving right now" reply (LOADING, MASTERDOWN, TRYAGAIN, CLUSTERDOWN,
// READONLY, max clients) and every transport failure (refused, reset, EOF, a
// timeout or per-call deadline); an untrusted server certificate (a wrong CA,
// a TLS client at a plain port) named as such, a misconfiguration wrapped as
// is; any other error reply (a bug, or a misconfiguration such as WRONGPASS)
// wrapped as is.
func Classify(ctx context.Context, addr string, err error) error {
	if err == nil {
		return nil
	}
	if ctx != nil && ctx.Err() != nil {
		if errors.Is(err, ctx.Err()) {
			return fmt.Errorf("redis %s: %w", addr, err)
		}
		return fmt.Errorf("redis %s: %w (%v)", addr, ctx.Err(), err)
	}
	if isTLSTrust(err) {
		return fmt.Errorf("redis %s: server certificate not trusted (check the CA file, LOCKBENCH_REDIS_CACERT, and that the port speaks TLS): %w", addr, err)
	}
	var reply redis.Error
	if errors.As(err, &reply) && !transient(err) {
		return fmt.Errorf("redis %s: %w", addr, err)
	}
	return fmt.Errorf("%w: redis %s: %w", strategies.ErrUnavailable, addr, err)
}

// transient reports whether a Redis error reply means the node cannot serve
// the request now but might later.
func transient(err error) bool {
	return redis.IsLoadingError(err) || redis.IsMasterDownError(err) ||
		redis.IsTryAgainError(err) || redis.IsClusterDownError(err) ||
		redis.IsReadOnlyError(err) || redis.IsMaxClientsError(err)
}

// IsTimeout reports whether err is a timeout rather than a refusal: a
// deadline passed, a socket read or write timed out, or no pooled connection
// came free in time. A timeout says the node (or this client) is slow, not
// that it is down.
func IsTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, redis.ErrPoolTimeout) ||
		(errors.As(err, &ne) && ne.Timeout())
}

// oneLine is an error whose message is err's lines, each once, joined by
// "; ": go-redis' failover client reports every Sentinel's refusal on a
// line of its own, the same refusal three times when a login is wrong.
type oneLine struct{ err error }

func (e oneLine) Error() string {
	var lines []string
	seen := map[string]bool{}
	for line := range strings.SplitSeq(e.err.Error(), "\n") {
		if line = strings.TrimSpace(line); line != "" && !seen[line] {
			seen[line] = true
			lines = append(lines, line)
		}
	}
	return strings.Join(lines, "; ")
}

func (e oneLine) Unwrap() error { return e.err }
