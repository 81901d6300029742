package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// PostgresMaxConns is the size of a Postgres store's connection pool: 64,
// enough for many concurrent workers. Connections are opened lazily, and a
// pool_max_conns setting in the DSN takes precedence.
const PostgresMaxConns = 64

// PostgresConnectTimeout bounds opening one connection: 2 seconds. A
// connect_timeout setting in the DSN takes precedence.
const PostgresConnectTimeout = 2 * time.Second

// PostgresConnectAttempts is how many times a call tries to get a
// connection when opening one times out: 3. At the start of a run every
// worker calls at once and each makes the pool open a connection; on a
// small machine that burst can outlast the connect timeout. A server that
// is down still fails the call within attempts × the connect timeout.
const PostgresConnectAttempts = 3

// SQLSTATEs raised by the store's functions, mapped back to the errors
// Memory returns.
const (
	sqlstateUnknown      = "LB001"
	sqlstateWithoutEnter = "LB002"
	sqlstateBaseAhead    = "LB003"
)

// Postgres is the store kept in PostgreSQL: a fenced write (refused when
// its token is older than the newest the key has seen, and with
// Setup.Strict when it is no newer than the last applied write's) done for
// real, with the same judgement as Memory (judgeWrite: the same counts for
// the same sequence of calls). Each lock key's row numbers its Enters
// (entries: the holder's entry number, by which a write is judged
// superseded) and its events (events: the history's seq).
//
// Its tables and functions are prefixed lockbench_store_. Enter and Finish
// are each one round trip to a PL/pgSQL function, so each runs in one
// READ COMMITTED transaction whose row locks last only for that call:
// nothing holds across Enter and Finish, which is exactly the span the lock
// under test must protect. (Holding a row lock or using serializable
// isolation across that span would make the store itself the lock and hide
// the strategy's failures.)
//
// The counters live on the rows they are about — overlaps and stale writes
// on the lock key; the overdrawn flag and the debits applied and still in
// the record on the account; applications and how many of them are in the
// account's record on the payment — so that no single counter row
// serialises every worker; Counts sums them.
//
// History (SetRecorder): the functions return the event's seq (the key's
// events counter) and the store's time (clock_timestamp(), read once with
// the key's row locked, in Unix ns to the microsecond), and Enter and
// Finish send the event to the recorder after the call returns. The row
// lock is released by then, so the events of one key can reach the
// recorder out of seq order (their seq is right); the lane, a hash of the
// key, keeps the recorder's calls of one lane apart.
type Postgres struct {
	pool *pgxpool.Pool
	// rec is the recorder SetRecorder installed, nil for none.
	rec atomic.Pointer[recorderRef]
	// lanes[l] is held around the Record calls of lane l (Recorder: the
	// calls of one lane never run at once).
	lanes [Lanes]sync.Mutex
}

// recorderRef boxes a Recorder for an atomic pointer.
type recorderRef struct{ r Recorder }

var (
	_ Store      = (*Postgres)(nil)
	_ Transactor = (*Postgres)(nil)
	_ Offerer    = (*Postgres)(nil)
	_ Historian  = (*Postgres)(nil)
)

// SetRecorder makes p send its events to r (nil: none). Set it between
// runs, not while workers call Enter and Finish.
func (p *Postgres) SetRecorder(r Recorder) {
	if r == nil {
		p.rec.Store(nil)
		return
	}
	p.rec.Store(&recorderRef{r})
}

// record sends ev to the recorder, if any, in the lane of ev's key.
func (p *Postgres) record(rec *recorderRef, ev *Event) {
	l := keyLane(ev.Key)
	p.lanes[l].Lock()
	defer p.lanes[l].Unlock()
	rec.r.Record(l, ev)
}

// keyLane is the Record lane of a lock key's events: a hash (FNV-1a) of
// the key.
func keyLane(key string) int {
	h := uint32(2166136261)
	for i := 0; i < len(key); i++ {
		h = (h ^ uint32(key[i])) * 16777619
	}
	return int(h % Lanes)
}

// NewPostgres connects to the database at dsn (a pgx connection string) and
// checks that it answers. Call Reset before use; instance processes that
// only call Enter and Finish can share a database that another process
// Reset. Errors never include the DSN's password.
func NewPostgres(ctx context.Context, dsn string) (*Postgres, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		// The parse error may quote the DSN, password included: say less.
		return nil, errors.New("store: postgres: cannot parse the DSN")
	}
	if !strings.Contains(dsn, "pool_max_conns") {
		cfg.MaxConns = PostgresMaxConns
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = PostgresConnectTimeout
	}
	// The judgement relies on READ COMMITTED: each statement sees what
	// committed before it, and nothing aborts for serialisation. Set it
	// in case the server defaults to something stricter.
	cfg.ConnConfig.RuntimeParams["default_transaction_isolation"] = "read committed"
	if _, ok := cfg.ConnConfig.RuntimeParams["application_name"]; !ok {
		cfg.ConnConfig.RuntimeParams["application_name"] = "lockbench-store"
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("store: postgres: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("store: postgres: %w", err)
	}
	return &Postgres{pool: pool}, nil
}

// Reset creates the store's tables and functions if they do not exist,
// empties them and loads s: the accounts, and the payments when s lists
// them (with COPY). A run's payments come later, a batch at a time, from
// Offer.
func (p *Postgres) Reset(ctx context.Context, s Setup) error {
	if err := validateSetup(s); err != nil {
		return err
	}
	err := pgx.BeginFunc(ctx, p.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, postgresSchema); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO lockbench_store_config (mode, fencing, strict) VALUES ($1, $2, $3)`,
			int32(s.Mode), s.Fencing, s.Fencing && s.Strict); err != nil {
			return err
		}
		_, err := tx.CopyFrom(ctx, pgx.Identifier{"lockbench_store_accounts"},
			[]string{"id", "balance"},
			pgx.CopyFromSlice(len(s.Balances), func(i int) ([]any, error) {
				return []any{int32(i), s.Balances[i]}, nil
			}))
		if err != nil {
			return err
		}
		return copyPayments(ctx, tx, 0, s.PaymentAccount)
	})
	if err != nil {
		return fmt.Errorf("store: postgres reset: %w", err)
	}
	// Fresh statistics keep the planner on the primary keys for the
	// functions' lookups after a bulk load. (A payments table that
	// starts empty and fills as the run offers is left unanalysed: the
	// planner then assumes a table of some pages, and the lookups stay
	// on the primary key too.)
	analyze := `ANALYZE lockbench_store_accounts`
	if len(s.PaymentAccount) > 0 {
		analyze += `, lockbench_store_payments`
	}
	if _, err := p.pool.Exec(ctx, analyze); err != nil {
		return fmt.Errorf("store: postgres reset: %w", err)
	}
	return nil
}

// Offer creates the rows of payments first… (Offerer), with one COPY.
func (p *Postgres) Offer(ctx context.Context, first int64, accounts []int32) error {
	if err := copyPayments(ctx, p.pool, first, accounts); err != nil {
		return fmt.Errorf("store: postgres offer: %w", err)
	}
	return nil
}

// copyPayments creates the rows of payments first… of accounts[i].
func copyPayments(ctx context.Context, db interface {
	CopyFrom(context.Context, pgx.Identifier, []string, pgx.CopyFromSource) (int64, error)
}, first int64, accounts []int32) error {
	if len(accounts) == 0 {
		return nil
	}
	_, err := db.CopyFrom(ctx, pgx.Identifier{"lockbench_store_payments"},
		[]string{"id", "account"},
		pgx.CopyFromSlice(len(accounts), func(i int) ([]any, error) {
			return []any{first + int64(i), accounts[i]}, nil
		}))
	return err
}

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

// postgresCountsTimeout bounds Counts, whose scan of the tables grows with
// the run: 1 minute.
const postgresCountsTimeout = time.Minute

// Counts computes the verdict from the tables, as Memory does from its
// state: lost_updates is Σ debits applied − Σ debits in the records.
func (p *Postgres) Counts(ctx context.Context) (Counts, error) {
	ctx, cancel := context.WithTimeout(ctx, postgresCountsTimeout)
	defer cancel()
	var c Counts
	// One statement, so one snapshot of all three tables.
	err := p.pool.QueryRow(ctx, `
SELECT p.processed, p.duplicates, p.lost, p.unprocessed, a.overdrafts,
       a.lost_updates, k.overlaps, k.stale_rejected, k.stale_accepted, p.applications,
       k.overlap_ns, k.overlap_max_ns, k.token_reused, k.token_regressed
FROM (SELECT count(*) FILTER (WHERE applications > 0) AS processed,
             coalesce(sum(applications - 1) FILTER (WHERE applications > 1), 0)::bigint AS duplicates,
             count(*) FILTER (WHERE applications > 0 AND in_record = 0) AS lost,
             count(*) FILTER (WHERE applications = 0) AS unprocessed,
             coalesce(sum(applications), 0)::bigint AS applications
      FROM lockbench_store_payments) p,
     (SELECT count(*) FILTER (WHERE overdrawn) AS overdrafts,
             coalesce(sum(applied_debits - in_record_debits), 0)::bigint AS lost_updates
      FROM lockbench_store_accounts) a,
     (SELECT coalesce(sum("overlaps"), 0)::bigint AS overlaps,
             coalesce(sum(stale_rejected), 0)::bigint AS stale_rejected,
             coalesce(sum(stale_accepted), 0)::bigint AS stale_accepted,
             coalesce(sum(overlap_ns), 0)::bigint AS overlap_ns,
             coalesce(max(overlap_max_ns), 0)::bigint AS overlap_max_ns,
             coalesce(sum(token_reused), 0)::bigint AS token_reused,
             coalesce(sum(token_regressed), 0)::bigint AS token_regressed
      FROM lockbench_store_lock_keys) k`,
	).Scan(&c.Processed, &c.Duplicates, &c.Lost, &c.Unprocessed, &c.Overdrafts,
		&c.LostUpdates, &c.Overlaps, &c.StaleRejected, &c.StaleAccepted, &c.Applications,
		&c.OverlapNs, &c.OverlapMaxNs, &c.TokenReused, &c.TokenRegressed)
	if err != nil {
		return Counts{}, fmt.Errorf("store: postgres counts: %w", err)
	}
	return c, nil
}

// Close closes the connection pool. The tables stay for inspection.
func (p *Postgres) Close() error {
	p.pool.Close()
	return nil
}

// postgresSchema creates the store's tables and functions idempotently and
// empties the tables. It runs inside Reset's transaction.
//
// lockbench_store_versions holds, in account mode, one row per version of
// an account's record: the version it was computed from (parent) and the
// application written with it (payment, debit). A record holds the
// applications on its chain of parents; Finish walks two chains to move the
// in-record counts (see Memory.rebase), so the walk is a loop of primary-key
// lookups inside one call. (A table rather than an array column: an array
// would be rewritten whole on every write to a hot account.) Payment mode
// needs no rows there: every write's parent is the version before it.
//
// Both functions are VOLATILE PL/pgSQL, so under READ COMMITTED every
// statement in them takes a fresh snapshot: once a statement has waited for
// a row lock, the next one sees what the previous holder of that lock
// committed. Enter and Finish take the lock key row first, and Finish then
// takes the account row and only then that account's payment rows: one
// order, so no deadlock. Each reads the clock once, with the key's row
// locked, so that a key's events are timed in the order the store took
// them (their seq) and a window of exposure is exactly the difference of
// the two events' times.
//
// Tables left by an older lockbench are brought to these columns (they are
// emptied anyway), and functions whose result changed are dropped before
// they are created again (CREATE OR REPLACE cannot change a result), so
// that a shared database keeps working across versions.
const postgresSchema = `
CREATE TABLE IF NOT EXISTS lockbench_store_config (
  mode    int  NOT NULL,
  fencing bool NOT NULL,
  strict  bool NOT NULL DEFAULT false -- fencing also refuses a token no newer than the last applied
);
ALTER TABLE lockbench_store_config
  ADD COLUMN IF NOT EXISTS strict bool NOT NULL DEFAULT false;
CREATE TABLE IF NOT EXISTS lockbench_store_accounts (
  id               int     PRIMARY KEY,
  balance          bigint  NOT NULL,
  version          bigint  NOT NULL DEFAULT 0,
  overdrawn        bool    NOT NULL DEFAULT false,
  applied_debits   bigint  NOT NULL DEFAULT 0, -- applications with a debit
  in_record_debits bigint  NOT NULL DEFAULT 0  -- those in the current record
);
ALTER TABLE lockbench_store_accounts
  ADD COLUMN IF NOT EXISTS applied_debits   bigint NOT NULL DEFAULT 0,
  ADD COLUMN IF NOT EXISTS in_record_debits bigint NOT NULL DEFAULT 0,
  DROP COLUMN IF EXISTS lost_updates;
DROP TABLE IF EXISTS lockbench_store_account_writes;
CREATE TABLE IF NOT EXISTS lockbench_store_versions (
  account int    NOT NULL,
  version bigint NOT NULL,
  parent  bigint NOT NULL,
  payment bigint NOT NULL,
  debit   bigint NOT NULL,
  PRIMARY KEY (account, version)
);
CREATE TABLE IF NOT EXISTS lockbench_store_payments (
  id           bigint PRIMARY KEY,
  account      int    NOT NULL,
  applications int    NOT NULL DEFAULT 0,
  in_record    int    NOT NULL DEFAULT 0 -- applications in the current record
);
ALTER TABLE lockbench_store_payments
  ADD COLUMN IF NOT EXISTS in_record int NOT NULL DEFAULT 0,
  DROP COLUMN IF EXISTS marked;
CREATE TABLE IF NOT EXISTS lockbench_store_lock_keys ( -- "overlaps" is a keyword
  key              text   PRIMARY KEY,
  active           int    NOT NULL,
  max_token        bigint NOT NULL,            -- the newest token seen (Enter, applied write)
  entries          bigint NOT NULL DEFAULT 0,  -- Enters so far: the last entry number
  events           bigint NOT NULL DEFAULT 0,  -- Enters and Finishes so far: the last seq
  "overlaps"       bigint NOT NULL DEFAULT 0,
  stale_rejected   bigint NOT NULL DEFAULT 0,
  stale_accepted   bigint NOT NULL DEFAULT 0,
  overlap_since_ns bigint,                     -- when active last rose to 2, Unix ns
  overlap_ns       bigint NOT NULL DEFAULT 0,  -- total time with 2+ inside
  overlap_max_ns   bigint NOT NULL DEFAULT 0,  -- the longest such time
  last_applied     bigint NOT NULL DEFAULT 0,  -- the token of the last applied write
  token_regressed  bigint NOT NULL DEFAULT 0,  -- writes not superseded with a token older than max_token
  token_reused     bigint NOT NULL DEFAULT 0   -- others with a token no newer than last_applied
);
ALTER TABLE lockbench_store_lock_keys
  ADD COLUMN IF NOT EXISTS entries          bigint NOT NULL DEFAULT 0,
  ADD COLUMN IF NOT EXISTS events           bigint NOT NULL DEFAULT 0,
  ADD COLUMN IF NOT EXISTS overlap_since_ns bigint,
  ADD COLUMN IF NOT EXISTS overlap_ns       bigint NOT NULL DEFAULT 0,
  ADD COLUMN IF NOT EXISTS overlap_max_ns   bigint NOT NULL DEFAULT 0,
  ADD COLUMN IF NOT EXISTS last_applied     bigint NOT NULL DEFAULT 0,
  ADD COLUMN IF NOT EXISTS token_regressed  bigint NOT NULL DEFAULT 0,
  ADD COLUMN IF NOT EXISTS token_reused     bigint NOT NULL DEFAULT 0,
  DROP COLUMN IF EXISTS overlap_since;

-- An older lockbench's functions: the same arguments with another result
-- (which CREATE OR REPLACE cannot change), or other arguments. Dropped
-- only when they differ, so that a Reset does not replace the functions
-- other sessions have plans for.
DO $do$
DECLARE
  f record;
BEGIN
  FOR f IN SELECT * FROM (VALUES
    ('lockbench_store_enter(text,bigint,bigint,int)',
     'TABLE(processed boolean, balance bigint, version bigint, entry bigint, seq bigint, at_ns bigint)'),
    ('lockbench_store_finish(text,bigint,bigint,int,bigint,bool,bigint,bigint,bigint)',
     'TABLE(applied boolean, stale_rejected boolean, refused smallint, seq bigint, at_ns bigint, made bigint)')
  ) AS v(sig, result) LOOP
    IF pg_get_function_result(to_regprocedure(f.sig)) <> f.result THEN
      EXECUTE 'DROP FUNCTION ' || to_regprocedure(f.sig)::text;
    END IF;
  END LOOP;
END
$do$;
DROP FUNCTION IF EXISTS lockbench_store_finish(text, bigint, bigint, int, bool, bigint, bigint, bigint);

-- Enter: the holder's entry number (entry), the event's seq and the
-- store's time (at_ns, Unix ns), and what the holder read.
CREATE OR REPLACE FUNCTION lockbench_store_enter(
  p_key text, p_token bigint, p_payment bigint, p_account int)
RETURNS TABLE (processed bool, balance bigint, version bigint, entry bigint, seq bigint, at_ns bigint)
LANGUAGE plpgsql VOLATILE AS $fn$
#variable_conflict use_column
DECLARE
  v_active int;    -- holders inside, this one included
  v_entry  bigint;
  v_seq    bigint;
  v_now    bigint;  -- the store's time of the event, Unix ns
BEGIN
  -- active++ on the lock key, counting an overlap when someone is inside,
  -- and the key's next entry number and event; the row lock lasts until
  -- this call returns.
  INSERT INTO lockbench_store_lock_keys AS k (key, active, max_token, entries, events)
  VALUES (p_key, 1, greatest(p_token, 0), 1, 1)
  ON CONFLICT (key) DO UPDATE SET
    active     = k.active + 1,
    "overlaps" = k."overlaps" + CASE WHEN k.active > 0 THEN 1 ELSE 0 END,
    max_token  = greatest(k.max_token, excluded.max_token),
    entries    = k.entries + 1,
    events     = k.events + 1
  RETURNING k.active, k.entries, k.events INTO v_active, v_entry, v_seq;
  -- Read with the row locked: the key's events are timed in seq order.
  -- Microseconds, exact in both numeric and double precision.
  v_now := (extract(epoch FROM clock_timestamp()) * 1000000)::bigint * 1000;
  IF v_active = 2 THEN
    -- A second holder: the window of exposure opens.
    UPDATE lockbench_store_lock_keys SET overlap_since_ns = v_now WHERE key = p_key;
  END IF;
  -- A fresh snapshot: sees every Finish that held the key before us.
  RETURN QUERY
    SELECT p.in_record > 0, a.balance, a.version, v_entry, v_seq, v_now
    FROM lockbench_store_payments p
    JOIN lockbench_store_accounts a ON a.id = p.account
    WHERE p.id = p_payment AND p.account = p_account;
  IF NOT FOUND THEN
    -- Rolls back the active++ above.
    RAISE EXCEPTION 'unknown payment % or account %', p_payment, p_account
      USING ERRCODE = '` + sqlstateUnknown + `';
  END IF;
END
$fn$;

-- Finish: whether the write was applied or refused (stale_rejected), the
-- count it went to (refused: the Refusal constants, 0 none, 1 stale, 2
-- token_regressed, 3 token_reused), the event's seq and the store's time
-- (at_ns, Unix ns), and the version an applied write made (0 otherwise).
-- Account mode: a write replaces the record at version p_current by what
-- its holder computed from its read at p_base. Walk the two down to their
-- common ancestor (step the larger; parents are smaller): what the current
-- side wrote leaves the record, what p_base's side wrote comes back into
-- it. Empty when the lock worked. Returns the change of the account's
-- in-record debits.
CREATE OR REPLACE FUNCTION lockbench_store_walk(
  p_account int, p_current bigint, p_base bigint)
RETURNS bigint
LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
  v_out    bigint := p_current; -- walks down from the current version
  v_back   bigint := p_base;    -- walks down from p_base
  v_parent bigint;
  v_paid   bigint;              -- the payment of the version walked
  v_amount bigint;              -- its debit
  v_debits bigint := 0;
BEGIN
  WHILE v_out <> v_back LOOP
    IF v_out > v_back THEN
      SELECT parent, payment, debit INTO STRICT v_parent, v_paid, v_amount
      FROM lockbench_store_versions WHERE account = p_account AND version = v_out;
      UPDATE lockbench_store_payments SET in_record = in_record - 1 WHERE id = v_paid;
      IF v_amount > 0 THEN
        v_debits := v_debits - 1;
      END IF;
      v_out := v_parent;
    ELSE
      SELECT parent, payment, debit INTO STRICT v_parent, v_paid, v_amount
      FROM lockbench_store_versions WHERE account = p_account AND version = v_back;
      UPDATE lockbench_store_payments SET in_record = in_record + 1 WHERE id = v_paid;
      IF v_amount > 0 THEN
        v_debits := v_debits + 1;
      END IF;
      v_back := v_parent;
    END IF;
  END LOOP;
  RETURN v_debits;
END
$fn$;

CREATE OR REPLACE FUNCTION lockbench_store_finish(
  p_key text, p_token bigint, p_payment bigint, p_account int, p_entry bigint,
  p_apply bool, p_debit bigint, p_base bigint, p_new_balance bigint)
RETURNS TABLE (applied bool, stale_rejected bool, refused smallint, seq bigint, at_ns bigint, made bigint)
LANGUAGE plpgsql VOLATILE AS $fn$
#variable_conflict use_column
DECLARE
  v_mode    int;
  v_fencing bool;
  v_strict  bool;
  v_active  int;       -- holders inside, this one included
  v_entries bigint;    -- the key's last entry number
  v_max     bigint;    -- the newest token the key has seen
  v_last    bigint;    -- the token of the key's last applied write
  v_since   bigint;    -- when the window of exposure under way opened
  v_now     bigint;    -- the store's time of the event, Unix ns
  v_overlap bigint := 0; -- the window this Finish closes
  v_older   bool;
  v_reused  bool;
  v_refused bool := false;
  v_why     smallint := 0; -- the count the write goes to (Refusal)
  v_seq     bigint;
  v_made    bigint;
  v_current bigint;
  v_debits  bigint := 0; -- change of the account's in-record debits
  v_debit   int := CASE WHEN p_debit > 0 THEN 1 ELSE 0 END;
BEGIN
  PERFORM 1 FROM lockbench_store_payments WHERE id = p_payment AND account = p_account;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'unknown payment % or account %', p_payment, p_account
      USING ERRCODE = '` + sqlstateUnknown + `';
  END IF;
  -- Take the lock key's row (until this call returns) and read it as it
  -- is when the store takes this write.
  SELECT active, entries, max_token, last_applied, overlap_since_ns
  INTO v_active, v_entries, v_max, v_last, v_since
  FROM lockbench_store_lock_keys WHERE key = p_key FOR UPDATE;
  IF NOT FOUND OR v_active <= 0 THEN
    RAISE EXCEPTION 'Finish without Enter on key %', p_key
      USING ERRCODE = '` + sqlstateWithoutEnter + `';
  END IF;
  -- Read with the row locked, as Enter does.
  v_now := (extract(epoch FROM clock_timestamp()) * 1000000)::bigint * 1000;
  IF v_active = 2 THEN
    -- Back to one holder: the window of exposure closes.
    v_overlap := greatest(0, v_now - v_since);
  END IF;
  IF p_apply THEN
    SELECT mode, fencing, strict INTO STRICT v_mode, v_fencing, v_strict FROM lockbench_store_config;
    IF v_mode = 0 THEN
      -- Account mode: lock the record, and refuse (changing nothing) a
      -- write computed from a version it never had.
      SELECT version INTO STRICT v_current FROM lockbench_store_accounts
      WHERE id = p_account FOR UPDATE;
      IF p_base > v_current THEN
        RAISE EXCEPTION 'base version % ahead of account % at %', p_base, p_account, v_current
          USING ERRCODE = '` + sqlstateBaseAhead + `';
      END IF;
    END IF;
    -- judgeWrite: superseded when the key has had a later Enter; refused
    -- by fencing when the token is older than the newest seen or, strict,
    -- no newer than the last applied write's.
    v_older   := p_token > 0 AND p_token < v_max;
    v_reused  := p_token > 0 AND p_token <= v_last;
    v_refused := v_fencing AND (v_older OR (v_strict AND v_reused));
    v_why := CASE WHEN v_entries > p_entry THEN 1
                  WHEN v_older THEN 2
                  WHEN v_reused THEN 3
                  ELSE 0 END;
  END IF;
  -- active--, the event, the window closed, the write's count, and the
  -- tokens an applied write raises (SET sees the old row).
  UPDATE lockbench_store_lock_keys SET
    active          = active - 1,
    events          = events + 1,
    overlap_ns      = overlap_ns + v_overlap,
    overlap_max_ns  = greatest(overlap_max_ns, v_overlap),
    stale_rejected  = stale_rejected + CASE WHEN v_why = 1 AND v_refused THEN 1 ELSE 0 END,
    stale_accepted  = stale_accepted + CASE WHEN v_why = 1 AND NOT v_refused THEN 1 ELSE 0 END,
    token_regressed = token_regressed + CASE WHEN v_why = 2 THEN 1 ELSE 0 END,
    token_reused    = token_reused + CASE WHEN v_why = 3 THEN 1 ELSE 0 END,
    max_token       = CASE WHEN p_apply AND NOT v_refused
      THEN greatest(max_token, p_token) ELSE max_token END,
    last_applied    = CASE WHEN p_apply AND NOT v_refused
      THEN greatest(last_applied, p_token) ELSE last_applied END
  WHERE key = p_key
  RETURNING events INTO STRICT v_seq;
  IF NOT p_apply THEN
    RETURN QUERY SELECT false, false, 0::smallint, v_seq, v_now, 0::bigint;
    RETURN;
  END IF;
  IF v_refused THEN
    RETURN QUERY SELECT false, true, v_why, v_seq, v_now, 0::bigint;
    RETURN;
  END IF;
  IF v_mode = 0 THEN
    -- Account mode: the record is replaced by what the holder computed
    -- from its read at p_base (lockbench_store_walk).
    v_debits := lockbench_store_walk(p_account, v_current, p_base);
    UPDATE lockbench_store_accounts SET
      balance          = p_new_balance,
      version          = v_current + 1,
      overdrawn        = overdrawn OR p_new_balance < 0,
      applied_debits   = applied_debits + v_debit,
      in_record_debits = in_record_debits + v_debits + v_debit
    WHERE id = p_account;
    INSERT INTO lockbench_store_versions (account, version, parent, payment, debit)
    VALUES (p_account, v_current + 1, p_base, p_payment, p_debit);
    v_made := v_current + 1;
  ELSE
    -- Payment mode: an atomic debit, computed from the current version,
    -- so the record keeps everything it held.
    UPDATE lockbench_store_accounts SET
      balance          = balance - p_debit,
      version          = version + 1,
      overdrawn        = overdrawn OR balance - p_debit < 0,
      applied_debits   = applied_debits + v_debit,
      in_record_debits = in_record_debits + v_debit
    WHERE id = p_account
    RETURNING version INTO STRICT v_made;
  END IF;
  UPDATE lockbench_store_payments SET applications = applications + 1, in_record = in_record + 1
  WHERE id = p_payment;
  RETURN QUERY SELECT true, false, v_why, v_seq, v_now, v_made;
END
$fn$;

-- pg-unique's processed markers (Process): the unique constraint is the
-- whole protection; the unguarded table is the control without it.
CREATE TABLE IF NOT EXISTS lockbench_store_processed (
  payment bigint PRIMARY KEY
);
CREATE TABLE IF NOT EXISTS lockbench_store_processed_unguarded (
  payment bigint NOT NULL
);

-- Process's write, in its transaction: the guarded debit (a declined
-- payment is still processed, as Finish records it) and the bookkeeping
-- Finish does for an applied write, computed from the current version (an
-- atomic update cannot overwrite anything).
CREATE OR REPLACE FUNCTION lockbench_store_debit(
  p_payment bigint, p_account int, p_amount bigint)
RETURNS bool
LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
  v_mode    int;
  v_version bigint;
  v_debit   bigint := 0;
BEGIN
  PERFORM 1 FROM lockbench_store_payments WHERE id = p_payment AND account = p_account;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'unknown payment % or account %', p_payment, p_account
      USING ERRCODE = '` + sqlstateUnknown + `';
  END IF;
  SELECT mode INTO STRICT v_mode FROM lockbench_store_config;
  UPDATE lockbench_store_accounts SET
    balance          = balance - p_amount,
    version          = version + 1,
    applied_debits   = applied_debits + 1,
    in_record_debits = in_record_debits + 1
  WHERE id = p_account AND balance >= p_amount
  RETURNING version INTO v_version;
  IF FOUND THEN
    v_debit := p_amount;
  ELSE
    UPDATE lockbench_store_accounts SET version = version + 1
    WHERE id = p_account
    RETURNING version INTO STRICT v_version;
  END IF;
  IF v_mode = 0 THEN
    -- Account mode keeps the chain of record versions that Finish walks.
    INSERT INTO lockbench_store_versions (account, version, parent, payment, debit)
    VALUES (p_account, v_version, v_version - 1, p_payment, v_debit);
  END IF;
  UPDATE lockbench_store_payments SET applications = applications + 1, in_record = in_record + 1
  WHERE id = p_payment;
  RETURN v_debit > 0;
END
$fn$;

-- pg-for-update's and pg-optimistic's processed marks (processRead): no
-- unique constraint, so the row lock or the version check is the whole
-- protection.
CREATE TABLE IF NOT EXISTS lockbench_store_marks (
  payment bigint NOT NULL
);
CREATE INDEX IF NOT EXISTS lockbench_store_marks_payment ON lockbench_store_marks (payment);

-- processRead's bookkeeping, in its transaction, after the app's update
-- made version p_made of the account from its read at p_base (whatever the
-- lock key): the record walk (a lost update when p_base was not the
-- version replaced), the debit's counts and the chain of versions, which
-- these writes always keep, since they always read-modify-write.
CREATE OR REPLACE FUNCTION lockbench_store_record(
  p_payment bigint, p_account int, p_debit bigint, p_base bigint, p_made bigint)
RETURNS void
LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
  v_debits bigint;
  v_debit  int := CASE WHEN p_debit > 0 THEN 1 ELSE 0 END;
BEGIN
  PERFORM 1 FROM lockbench_store_payments WHERE id = p_payment AND account = p_account;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'unknown payment % or account %', p_payment, p_account
      USING ERRCODE = '` + sqlstateUnknown + `';
  END IF;
  v_debits := lockbench_store_walk(p_account, p_made - 1, p_base);
  UPDATE lockbench_store_accounts SET
    overdrawn        = overdrawn OR balance < 0,
    applied_debits   = applied_debits + v_debit,
    in_record_debits = in_record_debits + v_debits + v_debit
  WHERE id = p_account;
  INSERT INTO lockbench_store_versions (account, version, parent, payment, debit)
  VALUES (p_account, p_made, p_base, p_payment, p_debit);
  UPDATE lockbench_store_payments SET applications = applications + 1, in_record = in_record + 1
  WHERE id = p_payment;
END
$fn$;

TRUNCATE lockbench_store_config, lockbench_store_accounts, lockbench_store_versions,
  lockbench_store_payments, lockbench_store_lock_keys, lockbench_store_processed,
  lockbench_store_processed_unguarded, lockbench_store_marks;
`
