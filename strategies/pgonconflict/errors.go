package pgonconflict

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/lockbench/lockbench/strategies"
)

// classify turns an error from a statement made on behalf of op into what
// the strategy reports:
//
//   - when ctx (the caller's context) is done, an error wrapping ctx.Err():
//     the caller gave up, the database is not to blame;
//   - an error the server returned whose SQLSTATE means "cannot serve now"
//     (connection exceptions, insufficient resources such as too many
//     connections, operator intervention such as a shutdown, system errors),
//     and every transport failure or per-statement deadline, wrapped in
//     strategies.ErrUnavailable;
//   - any other error the server returned (a bug or a misconfiguration),
//     wrapped as is.
//
// pgx's connection errors name the host, user and database, never the
// password.
func classify(ctx context.Context, op string, err error) error {
	if ctx.Err() != nil {
		if errors.Is(err, ctx.Err()) {
			return fmt.Errorf("pgonconflict: %s: %w", op, err)
		}
		return fmt.Errorf("pgonconflict: %s: %w (%v)", op, ctx.Err(), err)
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && !transient(pgErr.Code) {
		return fmt.Errorf("pgonconflict: %s: %w", op, err)
	}
	return fmt.Errorf("%w: pgonconflict: %s: %w", strategies.ErrUnavailable, op, err)
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

// isUndefinedTable reports whether err is Postgres's undefined_table
// (42P01), which a missing sequence raises too.
func isUndefinedTable(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "42P01"
}
