package pgadvisory

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/lockbench/lockbench/strategies"
)

// errClosed is returned by Acquire on a closed strategy.
var errClosed = errors.New("pgadvisory: strategy closed")

// classify turns an error from a statement made on behalf of op into what
// the strategy reports, by pg-onconflict's rules:
//
//   - when ctx (the caller's context) is done, an error wrapping ctx.Err();
//   - a server error whose SQLSTATE means "cannot serve now" (classes 08,
//     53, 57, 58), and every transport failure or per-statement deadline,
//     wrapped in strategies.ErrUnavailable;
//   - any other server error, wrapped as is.
//
// pgx's connection errors name the host, user and database, never the
// password.
func classify(ctx context.Context, op string, err error) error {
	if ctx.Err() != nil {
		if errors.Is(err, ctx.Err()) {
			return fmt.Errorf("pgadvisory: %s: %w", op, err)
		}
		return fmt.Errorf("pgadvisory: %s: %w (%v)", op, ctx.Err(), err)
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && !transient(pgErr.Code) {
		return fmt.Errorf("pgadvisory: %s: %w", op, err)
	}
	return fmt.Errorf("%w: pgadvisory: %s: %w", strategies.ErrUnavailable, op, err)
}

// transient reports whether SQLSTATE code means the server cannot serve the
// statement now but might later.
func transient(code string) bool {
	if len(code) < 2 {
		return false
	}
	switch code[:2] {
	case "08", // connection exception
		"53", // insufficient resources (too many connections, out of memory)
		"57", // operator intervention (shutdown, cannot connect now)
		"58": // system error
		return true
	}
	return false
}
