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
// (42P01), which a missing sequence raises too.
func isUndefinedTable(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "42P01"
}
