// Package pgutil holds what the Postgres strategies (pg-onconflict,
// pg-advisory) share: how an error from a statement becomes what a
// strategy reports.
package pgutil

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/lockbench/lockbench/strategies"
)

// Classify turns an error from a statement made by strategy name on behalf
// of op into what the strategy reports:
//
//   - when ctx (the caller's context) is done, an error wrapping ctx.Err():
//     the caller gave up, the database is not to blame;
//   - an error the server returned whose SQLSTATE means "cannot serve now"
//     (Transient), and every transport failure or per-statement deadline,
//     wrapped in strategies.ErrUnavailable;
//   - any other error the server returned (a bug or a misconfiguration),
//     wrapped as is.
//
// pgx's connection errors name the host, user and database, never the
// password.
func Classify(ctx context.Context, name, op string, err error) error {
	if ctx.Err() != nil {
		if errors.Is(err, ctx.Err()) {
			return fmt.Errorf("%s: %s: %w", name, op, err)
		}
		return fmt.Errorf("%s: %s: %w (%v)", name, op, ctx.Err(), err)
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && !Transient(pgErr.Code) {
		return fmt.Errorf("%s: %s: %w", name, op, err)
	}
	return fmt.Errorf("%w: %s: %s: %w", strategies.ErrUnavailable, name, op, err)
}

// Transient reports whether SQLSTATE code means the server cannot serve the
// statement now but might later: connection exceptions (08), insufficient
// resources such as too many connections (53), operator intervention such
// as a shutdown (57), system errors (58).
func Transient(code string) bool {
	if len(code) < 2 {
		return false
	}
	switch code[:2] {
	case "08", "53", "57", "58":
		return true
	}
	return false
}
