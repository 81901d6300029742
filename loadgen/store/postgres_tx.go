package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// SQLSTATEs raised by the store's functions, mapped back to the errors
// Memory returns.
const (
	sqlstateUnknown      = "LB001"
	sqlstateWithoutEnter = "LB002"
	sqlstateBaseAhead    = "LB003"
)

// Enter records a holder entering the critical section of r.LockKey and
// returns what it reads, in one round trip.
func (p *Postgres) Enter(ctx context.Context, r EnterReq) (EnterResp, error) {
	var out EnterResp
	var seq, atNs int64
	err := p.call(ctx, `SELECT * FROM lockbench_store_enter($1, $2, $3, $4)`,
		[]any{r.LockKey, r.Token, r.Payment, r.Account},
		&out.Processed, &out.Balance, &out.Version, &out.Entry, &seq, &atNs)
	if err != nil {
		return EnterResp{}, postgresError("enter", err)
	}
	if rec := p.rec.Load(); rec != nil {
		p.record(rec, &Event{Key: r.LockKey, Instance: int32(r.Instance), Worker: r.Worker,
			Payment: r.Payment, Account: r.Account, Seq: seq, Entry: out.Entry, AtNs: atNs,
			Token: r.Token, Processed: out.Processed, Balance: out.Balance, Version: out.Version})
	}
	return out, nil
}

// Finish records the holder leaving and applies its write, judging it, in
// one round trip and one transaction.
func (p *Postgres) Finish(ctx context.Context, r FinishReq) (FinishResp, error) {
	if r.BaseVersion < 0 {
		return FinishResp{}, errNegativeBase
	}
	var out FinishResp
	var refused int16
	var seq, atNs, made int64
	err := p.call(ctx, `SELECT * FROM lockbench_store_finish($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
		[]any{r.LockKey, r.Token, r.Payment, r.Account, r.Entry, r.Apply, r.Debit, r.BaseVersion, r.NewBalance},
		&out.Applied, &out.StaleRejected, &refused, &seq, &atNs, &made)
	if err != nil {
		return FinishResp{}, postgresError("finish", err)
	}
	out.Refused = Refusal(refused)
	if rec := p.rec.Load(); rec != nil {
		ev := Event{Finish: true, Key: r.LockKey, Payment: r.Payment, Account: r.Account,
			Seq: seq, Entry: r.Entry, AtNs: atNs, Token: r.Token}
		if r.Apply {
			ev.Wrote, ev.Applied, ev.Refused, ev.Made = true, out.Applied, out.Refused, made
			ev.Base, ev.Debit, ev.NewBalance = r.BaseVersion, r.Debit, r.NewBalance
		}
		p.record(rec, &ev)
	}
	return out, nil
}

// Process runs r as one transaction on the store's database (see
// Transactor). The marker insert waits while another transaction holds the
// same marker uncommitted, and then finds it (that one committed) or inserts
// it (that one rolled back): the unique constraint excludes duplicates, so no
// lock is needed. lockbench_store_debit does the guarded debit and the
// bookkeeping Finish would do, in the same transaction, so a delivery
// counts as applied exactly when its transaction commits.
func (p *Postgres) Process(ctx context.Context, r TxReq, inside func(ctx context.Context) error) (TxResp, error) {
	if r.Kind != TxUniqueMarker {
		return p.processRead(ctx, r, inside)
	}
	marker := `INSERT INTO lockbench_store_processed (payment) VALUES ($1) ON CONFLICT DO NOTHING`
	if r.Unguarded {
		marker = `INSERT INTO lockbench_store_processed_unguarded (payment) VALUES ($1)`
	}
	var out TxResp
	err := runTx(ctx, p.pool, pgx.TxOptions{}, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, marker, r.Payment)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return nil // processed by another delivery: nothing to do
		}
		out.Claimed = true
		if inside != nil {
			if err := inside(ctx); err != nil {
				return err
			}
		}
		if err := tx.QueryRow(ctx, `SELECT lockbench_store_debit($1, $2, $3)`, r.Payment, r.Account, r.Amount).Scan(&out.Debited); err != nil {
			return err
		}
		if r.Leave != nil {
			r.Leave()
		}
		return nil
	})
	switch {
	case errors.Is(err, ErrOutcomeUnknown):
		return out, err
	case err != nil:
		return TxResp{}, postgresError("process", err)
	}
	return out, nil
}

// runTx runs fn in a transaction of pool, as pgx.BeginTxFunc does, but
// tells a failed COMMIT apart: the database may have committed it, so the
// error wraps ErrOutcomeUnknown.
func runTx(ctx context.Context, pool *pgxpool.Pool, opts pgx.TxOptions, fn func(pgx.Tx) error) error {
	tx, err := pool.BeginTx(ctx, opts)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback(ctx) // as pgx.BeginTxFunc: a done ctx closes the connection
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("%w: %w", ErrOutcomeUnknown, err)
	}
	return nil
}

// errConflict rolls back a TxOptimistic transaction whose version check
// failed; Process reports it as TxResp.Conflict.
var errConflict = errors.New("store: version check failed")

// processRead runs the transactions that read the account row and write
// a debit computed from what they read (TxRowLock, TxOptimistic), at READ
// COMMITTED: read the row (FOR UPDATE, under lock_timeout, for TxRowLock),
// look for the payment's processed mark (a plain row, no unique
// constraint), and only if there is none: inside, the update (checked
// against the version read, for TxOptimistic), the mark, and the store's
// bookkeeping of the write in lockbench_store_record.
func (p *Postgres) processRead(ctx context.Context, r TxReq, inside func(ctx context.Context) error) (TxResp, error) {
	read := `SELECT balance, version FROM lockbench_store_accounts WHERE id = $1`
	if r.Kind == TxRowLock && !r.Unguarded {
		read += ` FOR UPDATE`
	}
	update := `UPDATE lockbench_store_accounts SET balance = $2, version = version + 1 WHERE id = $1`
	if r.Kind == TxOptimistic && !r.Unguarded {
		update += ` AND version = $3`
	}
	update += ` RETURNING version`
	var out TxResp
	err := runTx(ctx, p.pool, pgx.TxOptions{IsoLevel: pgx.ReadCommitted}, func(tx pgx.Tx) error {
		if r.Kind == TxRowLock && r.LockTimeout > 0 {
			ms := max(1, r.LockTimeout.Milliseconds())
			if _, err := tx.Exec(ctx, `SELECT set_config('lock_timeout', $1, true)`, strconv.FormatInt(ms, 10)+"ms"); err != nil {
				return err
			}
		}
		var balance, version int64
		if err := tx.QueryRow(ctx, read, r.Account).Scan(&balance, &version); err != nil {
			return err
		}
		var done bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM lockbench_store_marks WHERE payment = $1)`, r.Payment).Scan(&done); err != nil {
			return err
		}
		if done {
			return nil // processed by another delivery: nothing to do
		}
		out.Claimed = true
		if inside != nil {
			if err := inside(ctx); err != nil {
				return err
			}
		}
		var debit int64
		if balance >= r.Amount {
			debit = r.Amount
		}
		args := []any{r.Account, balance - debit}
		if r.Kind == TxOptimistic && !r.Unguarded {
			args = append(args, version)
		}
		var made int64
		switch err := tx.QueryRow(ctx, update, args...).Scan(&made); {
		case errors.Is(err, pgx.ErrNoRows):
			out.Conflict = true
			return errConflict
		case err != nil:
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO lockbench_store_marks (payment) VALUES ($1)`, r.Payment); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `SELECT lockbench_store_record($1, $2, $3, $4, $5)`, r.Payment, r.Account, debit, version, made); err != nil {
			return err
		}
		out.Debited = debit > 0
		if r.Leave != nil {
			r.Leave()
		}
		return nil
	})
	var pgErr *pgconn.PgError
	switch {
	case err == nil:
		return out, nil
	case errors.Is(err, ErrOutcomeUnknown):
		return out, err
	case errors.Is(err, errConflict):
		return TxResp{Claimed: true, Conflict: true}, nil
	case errors.As(err, &pgErr) && pgErr.Code == sqlstateLockNotAvailable:
		return TxResp{}, fmt.Errorf("%w: %w", ErrLockTimeout, err)
	}
	return TxResp{}, postgresError("process", err)
}

// sqlstateLockNotAvailable is lock_not_available: a lock wait passed
// lock_timeout.
const sqlstateLockNotAvailable = "55P03"

// call runs one statement that returns one row, within CallTimeout as a
// store reached over a connection does (a server that stops answering
// fails the call, it does not hold a worker past its run). It tries again
// only when opening a connection timed out and ctx has time left: the
// statement was never sent, so nothing can happen twice.
func (p *Postgres) call(ctx context.Context, sql string, args []any, dest ...any) error {
	ctx, cancel := context.WithTimeout(ctx, CallTimeout)
	defer cancel()
	var err error
	for range PostgresConnectAttempts {
		err = p.pool.QueryRow(ctx, sql, args...).Scan(dest...)
		var connectErr *pgconn.ConnectError
		if err == nil || ctx.Err() != nil || !errors.As(err, &connectErr) || !pgconn.Timeout(err) {
			return err
		}
	}
	return err
}

// postgresError maps the functions' own SQLSTATEs to Memory's errors.
func postgresError(op string, err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case sqlstateUnknown:
			return errUnknownPayment
		case sqlstateWithoutEnter:
			return errFinishWithoutEnter
		case sqlstateBaseAhead:
			return errBaseAhead
		}
	}
	return fmt.Errorf("store: postgres %s: %w", op, err)
}
