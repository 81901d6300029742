package pgadvisory

import (
	"context"
	"errors"

	"github.com/lockbench/lockbench/strategies/pgutil"
)

// errClosed is returned by Acquire on a closed strategy.
var errClosed = errors.New("pgadvisory: strategy closed")

// classify turns an error from a statement made on behalf of op into what
// the strategy reports (pgutil.Classify).
func classify(ctx context.Context, op string, err error) error {
	return pgutil.Classify(ctx, "pgadvisory", op, err)
}
