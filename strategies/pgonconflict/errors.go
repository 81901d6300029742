package pgonconflict

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/lockbench/lockbench/strategies/pgutil"
)

// classify turns an error from a statement made on behalf of op into what
// the strategy reports (pgutil.Classify).
func classify(ctx context.Context, op string, err error) error {
	return pgutil.Classify(ctx, "pgonconflict", op, err)
}

// isUndefinedTable reports whether err is Postgres's undefined_table
// (42P01), which a missing sequence raises too. A nil err is looked at
// first: it is every claim's, and errors.As's target escapes to the heap,
// an allocation a cycle on the path that has no error.
func isUndefinedTable(err error) bool {
	if err == nil {
		return false
	}
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "42P01"
}
