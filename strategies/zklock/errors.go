package zklock

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"

	"github.com/lockbench/lockbench/strategies"
)

// classify turns an error from a request made for op into what the strategy
// reports: ctx.Err() when the caller's ctx is done (the ensemble is not to
// blame); the server's answer about the request itself (no such znode, a bad
// ACL: a bug or a misconfiguration) as is; anything else (no connection, no
// answer in time, a session that expired or moved, the client closing)
// wrapped in strategies.ErrUnavailable.
func classify(ctx context.Context, op string, err error) error {
	if ctx.Err() != nil {
		if errors.Is(err, ctx.Err()) {
			return fmt.Errorf("zklock: %s: %w", op, err)
		}
		return fmt.Errorf("zklock: %s: %w (%v)", op, ctx.Err(), err)
	}
	if definite(err) {
		return fmt.Errorf("zklock: %s: %w", op, err)
	}
	return fmt.Errorf("%w: zklock: %s: %w", strategies.ErrUnavailable, op, err)
}

// definite reports whether err makes the request's outcome known: the
// server's answer to a request it carried out or refused, or the client's
// refusal to send it.
func definite(err error) bool {
	return serverAnswer(err) || errors.Is(err, zk.ErrInvalidPath) ||
		errors.Is(err, zk.ErrInvalidFlags) || errors.Is(err, zk.ErrBadArguments) ||
		errors.Is(err, zk.ErrAuthFailed)
}

// answered reports whether the server received the request that ended
// with err: a success, or the server's answer.
func answered(err error) bool { return err == nil || serverAnswer(err) }

func serverAnswer(err error) bool {
	for _, e := range []error{
		zk.ErrNoNode, zk.ErrNodeExists, zk.ErrBadVersion, zk.ErrNotEmpty,
		zk.ErrNoChildrenForEphemerals, zk.ErrNoAuth, zk.ErrInvalidACL, zk.ErrAPIError,
	} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}
