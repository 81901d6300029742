package pgonconflict

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// schemaLockID is the advisory lock that serializes createSchema across
// processes ("lockbenc" in ASCII).
const schemaLockID int64 = 0x6c6f636b62656e63

// schemaSQL creates the sequence and the table. The sequence's CACHE 1 (the
// default, spelled out) matters: with a larger cache each connection would
// hand out numbers from its own block, out of time order.
var schemaSQL = []string{
	`CREATE SEQUENCE IF NOT EXISTS lockbench_lock_tokens CACHE 1`,
	`CREATE TABLE IF NOT EXISTS lockbench_locks (
		key        text        PRIMARY KEY,
		owner      text        NOT NULL,
		token      bigint      NOT NULL,
		expires_at timestamptz NOT NULL
	)`,
}

// claimSQL takes the lock on $1 for owner $2 for the interval $3, returning
// the new token, or no row when a live claim holds the key (its NOT EXISTS
// filter: "The claim statement" in the package doc).
//
// Tokens must grow across successive holders of a key. A token drawn for
// the inserted row would not be safe in general: nextval runs when the
// statement builds that row, before the conflict check, so a statement
// delayed between the two (descheduled, or waiting on the previous holder's
// row lock) could take the key after a holder that drew a larger number
// later. Hence:
//
//   - On the update path (the row exists), the token is a fresh nextval in
//     SET, which Postgres evaluates only after it has locked the latest
//     version of the row and found the claim expired or released. The
//     previous holder's statement drew its token before committing that
//     version, and the row lock waits for that commit, so the new token is
//     larger.
//   - The insert path only succeeds when the key has no row at all. Rows are
//     never deleted (Release marks them free instead), so that is the key's
//     first holder ever, with no predecessor to compare against.
const claimSQL = `INSERT INTO lockbench_locks AS l (key, owner, token, expires_at)
SELECT $1::text, $2::text, nextval('lockbench_lock_tokens'), now() + $3::interval
WHERE NOT EXISTS (SELECT 1 FROM lockbench_locks WHERE key = $1::text AND expires_at > now())
ON CONFLICT (key) DO UPDATE
	SET owner = EXCLUDED.owner,
	    token = nextval('lockbench_lock_tokens'),
	    expires_at = EXCLUDED.expires_at
	WHERE l.expires_at <= now()
RETURNING token`

// releaseSQL frees $1's claim if owner $2 still holds it with token $3 and
// it has not expired. It keeps the row (see claimSQL); -infinity makes it
// free for any claimant, whatever the transaction start times.
const releaseSQL = `UPDATE lockbench_locks SET expires_at = '-infinity'
WHERE key = $1 AND owner = $2 AND token = $3 AND expires_at > now()`

// ClaimSQL and ReleaseSQL are claimSQL and releaseSQL, exported for the
// harness self-check (bench/selfcheck), whose bare pgx loop and pgbench
// script must run exactly the statements of this strategy's lock cycle.
const (
	ClaimSQL   = claimSQL
	ReleaseSQL = releaseSQL
)

// extendSQL makes $1's claim by owner $2 with token $3 last at least the
// interval $4 from now(), if it is still that claim and has not expired. The
// owner and token in the WHERE are what keep it to the lease's own claim:
// a claim taken over since has a new token, and an UPDATE that waited on
// the row lock of that takeover re-reads the row and finds the new token.
// greatest() never shortens the claim, so a lease's Deadline stays
// conservative whatever became of an Extend whose reply was lost.
const extendSQL = `UPDATE lockbench_locks SET expires_at = greatest(expires_at, now() + $4::interval)
WHERE key = $1 AND owner = $2 AND token = $3 AND expires_at > now()`

// createSchema creates the sequence and table if they are missing. An
// advisory lock serializes it across processes: concurrent CREATE … IF NOT
// EXISTS statements can both see nothing and then collide in the catalogs
// with a unique violation.
func createSchema(ctx context.Context, pool *pgxpool.Pool) error {
	sctx, cancel := context.WithTimeout(ctx, DefaultStatementTimeout)
	defer cancel()
	err := pgx.BeginFunc(sctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(sctx, `SELECT pg_advisory_xact_lock($1)`, schemaLockID); err != nil {
			return err
		}
		for _, stmt := range schemaSQL {
			if _, err := tx.Exec(sctx, stmt); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return classify(ctx, "create schema", err)
	}
	return nil
}
