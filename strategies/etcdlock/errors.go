package etcdlock

import (
	"context"
	"errors"
	"fmt"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lockbench/lockbench/strategies"
)

// classify turns an error from a request made for op into what the strategy
// reports: ctx.Err() when the caller's ctx is done (the cluster is not to
// blame); strategies.ErrUnavailable for a transient etcd or gRPC code, a
// transport failure or a per-request deadline; any other server error (a bug
// or a misconfiguration) wrapped as is.
func classify(ctx context.Context, op string, err error) error {
	if ctx.Err() != nil {
		if errors.Is(err, ctx.Err()) {
			return fmt.Errorf("etcdlock: %s: %w", op, err)
		}
		return fmt.Errorf("etcdlock: %s: %w (%v)", op, ctx.Err(), err)
	}
	if code, ok := serverCode(err); ok && !transient(code) {
		return fmt.Errorf("etcdlock: %s: %w", op, err)
	}
	return fmt.Errorf("%w: etcdlock: %s: %w", strategies.ErrUnavailable, op, err)
}

// serverCode returns the gRPC code of an error the server (or gRPC) returned.
func serverCode(err error) (codes.Code, bool) {
	var ee rpctypes.EtcdError
	if errors.As(err, &ee) {
		return ee.Code(), true
	}
	if s, ok := status.FromError(err); ok {
		return s.Code(), true
	}
	return codes.Unknown, false
}

// transient reports whether code means the cluster cannot serve the request
// now but might later.
func transient(code codes.Code) bool {
	switch code {
	case codes.Unavailable, codes.DeadlineExceeded, codes.Canceled,
		codes.ResourceExhausted, codes.Aborted, codes.Internal:
		return true
	}
	return false
}
