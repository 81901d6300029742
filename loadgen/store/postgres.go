package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
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

// Postgres is the store kept in PostgreSQL: a fenced write (UPDATE … WHERE
// the token is not older than the newest seen, and with Setup.Strict newer
// than the last applied write's) done for real, with the same judgement as
// Memory (the same counts for the same sequence of calls).
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
type Postgres struct {
	pool *pgxpool.Pool
}

var (
	_ Store      = (*Postgres)(nil)
	_ Transactor = (*Postgres)(nil)
	_ Offerer    = (*Postgres)(nil)
)

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
	err := p.call(ctx, `SELECT * FROM lockbench_store_enter($1, $2, $3, $4)`,
		[]any{r.LockKey, r.Token, r.Payment, r.Account},
		&out.Processed, &out.Balance, &out.Version)
	if err != nil {
		return EnterResp{}, postgresError("enter", err)
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
	err := p.call(ctx, `SELECT * FROM lockbench_store_finish($1, $2, $3, $4, $5, $6, $7, $8)`,
		[]any{r.LockKey, r.Token, r.Payment, r.Account, r.Apply, r.Debit, r.BaseVersion, r.NewBalance},
		&out.Applied, &out.StaleRejected)
	if err != nil {
		return FinishResp{}, postgresError("finish", err)
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
	marker := `INSERT INTO lockbench_store_processed (payment) VALUES ($1) ON CONFLICT DO NOTHING`
	if r.Unguarded {
		marker = `INSERT INTO lockbench_store_processed_unguarded (payment) VALUES ($1)`
	}
	var out TxResp
	err := pgx.BeginFunc(ctx, p.pool, func(tx pgx.Tx) error {
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
		return tx.QueryRow(ctx, `SELECT lockbench_store_debit($1, $2, $3)`, r.Payment, r.Account, r.Amount).Scan(&out.Debited)
	})
	if err != nil {
		return TxResp{}, postgresError("process", err)
	}
	return out, nil
}

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
       k.overlap_ns, k.overlap_max_ns, k.token_reused
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
             coalesce(sum(token_reused), 0)::bigint AS token_reused
      FROM lockbench_store_lock_keys) k`,
	).Scan(&c.Processed, &c.Duplicates, &c.Lost, &c.Unprocessed, &c.Overdrafts,
		&c.LostUpdates, &c.Overlaps, &c.StaleRejected, &c.StaleAccepted, &c.Applications,
		&c.OverlapNs, &c.OverlapMaxNs, &c.TokenReused)
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
// order, so no deadlock.
//
// Tables left by an older lockbench are brought to these columns (they are
// emptied anyway), so that a shared database keeps working across versions.
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
  key            text   PRIMARY KEY,
  active         int    NOT NULL,
  max_token      bigint NOT NULL,
  "overlaps"     bigint NOT NULL DEFAULT 0,
  stale_rejected bigint NOT NULL DEFAULT 0,
  stale_accepted bigint NOT NULL DEFAULT 0,
  overlap_since  timestamptz,                -- when active last rose to 2
  overlap_ns     bigint NOT NULL DEFAULT 0,  -- total time with 2+ inside
  overlap_max_ns bigint NOT NULL DEFAULT 0,  -- the longest such time
  last_applied   bigint NOT NULL DEFAULT 0,  -- the token of the last applied write
  token_reused   bigint NOT NULL DEFAULT 0   -- writes with a token no newer than that
);
ALTER TABLE lockbench_store_lock_keys
  ADD COLUMN IF NOT EXISTS overlap_since  timestamptz,
  ADD COLUMN IF NOT EXISTS overlap_ns     bigint NOT NULL DEFAULT 0,
  ADD COLUMN IF NOT EXISTS overlap_max_ns bigint NOT NULL DEFAULT 0,
  ADD COLUMN IF NOT EXISTS last_applied   bigint NOT NULL DEFAULT 0,
  ADD COLUMN IF NOT EXISTS token_reused   bigint NOT NULL DEFAULT 0;

CREATE OR REPLACE FUNCTION lockbench_store_enter(
  p_key text, p_token bigint, p_payment bigint, p_account int)
RETURNS TABLE (processed bool, balance bigint, version bigint)
LANGUAGE plpgsql VOLATILE AS $fn$
#variable_conflict use_column
BEGIN
  -- active++ on the lock key, counting an overlap when someone is inside;
  -- the row lock lasts until this call returns.
  INSERT INTO lockbench_store_lock_keys AS k (key, active, max_token)
  VALUES (p_key, 1, greatest(p_token, 0))
  ON CONFLICT (key) DO UPDATE SET
    active    = k.active + 1,
    "overlaps" = k."overlaps" + CASE WHEN k.active > 0 THEN 1 ELSE 0 END,
    overlap_since = CASE WHEN k.active = 1 THEN clock_timestamp() ELSE k.overlap_since END,
    max_token = greatest(k.max_token, excluded.max_token);
  -- A fresh snapshot: sees every Finish that held the key before us.
  RETURN QUERY
    SELECT p.in_record > 0, a.balance, a.version
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

CREATE OR REPLACE FUNCTION lockbench_store_finish(
  p_key text, p_token bigint, p_payment bigint, p_account int,
  p_apply bool, p_debit bigint, p_base bigint, p_new_balance bigint)
RETURNS TABLE (applied bool, stale_rejected bool)
LANGUAGE plpgsql VOLATILE AS $fn$
#variable_conflict use_column
DECLARE
  v_mode    int;
  v_fencing bool;
  v_strict  bool;
  v_last    bigint;      -- the token of the key's last applied write
  v_current bigint;
  v_out     bigint;      -- walks down from the current version
  v_back    bigint;      -- walks down from p_base
  v_parent  bigint;
  v_paid    bigint;      -- the payment of the version walked
  v_amount  bigint;      -- its debit
  v_debits  bigint := 0; -- change of the account's in-record debits
  v_debit   int := CASE WHEN p_debit > 0 THEN 1 ELSE 0 END;
  v_now     timestamptz := clock_timestamp(); -- one reading for the overlap's end
BEGIN
  PERFORM 1 FROM lockbench_store_payments WHERE id = p_payment AND account = p_account;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'unknown payment % or account %', p_payment, p_account
      USING ERRCODE = '` + sqlstateUnknown + `';
  END IF;
  -- active-- (SET sees the old row: active = 2 means back to one holder,
  -- which closes the window of exposure).
  UPDATE lockbench_store_lock_keys SET
    active         = active - 1,
    overlap_ns     = overlap_ns + CASE WHEN active = 2
      THEN (extract(epoch FROM v_now - overlap_since) * 1e9)::bigint ELSE 0 END,
    overlap_max_ns = greatest(overlap_max_ns, CASE WHEN active = 2
      THEN (extract(epoch FROM v_now - overlap_since) * 1e9)::bigint ELSE 0 END)
  WHERE key = p_key AND active > 0;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'Finish without Enter on key %', p_key
      USING ERRCODE = '` + sqlstateWithoutEnter + `';
  END IF;
  IF NOT p_apply THEN
    RETURN QUERY SELECT false, false;
    RETURN;
  END IF;
  SELECT mode, fencing, strict INTO STRICT v_mode, v_fencing, v_strict FROM lockbench_store_config;
  IF v_mode = 0 THEN
    -- Account mode: lock the record, and refuse (rolling back the
    -- active-- above) a write computed from a version it never had.
    SELECT version INTO STRICT v_current FROM lockbench_store_accounts
    WHERE id = p_account FOR UPDATE;
    IF p_base > v_current THEN
      RAISE EXCEPTION 'base version % ahead of account % at %', p_base, p_account, v_current
        USING ERRCODE = '` + sqlstateBaseAhead + `';
    END IF;
  END IF;
  IF p_token > 0 THEN
    -- The fenced write, with its result checked: no row means
    -- a newer token was already seen for this key.
    UPDATE lockbench_store_lock_keys SET max_token = p_token
    WHERE key = p_key AND max_token <= p_token;
    IF NOT FOUND THEN
      IF v_fencing THEN
        UPDATE lockbench_store_lock_keys SET stale_rejected = stale_rejected + 1
        WHERE key = p_key;
        RETURN QUERY SELECT false, true;
        RETURN;
      END IF;
      UPDATE lockbench_store_lock_keys SET stale_accepted = stale_accepted + 1
      WHERE key = p_key;
    ELSE
      -- Not older than the newest seen, but is it newer than the last
      -- applied write's (WHERE fencing_token < $new)? A token handed out
      -- twice is not. The key's row is ours since the active-- above.
      SELECT last_applied INTO STRICT v_last FROM lockbench_store_lock_keys WHERE key = p_key;
      IF p_token <= v_last THEN
        UPDATE lockbench_store_lock_keys SET token_reused = token_reused + 1
        WHERE key = p_key;
        IF v_strict THEN
          RETURN QUERY SELECT false, true;
          RETURN;
        END IF;
      END IF;
    END IF;
    UPDATE lockbench_store_lock_keys SET last_applied = greatest(last_applied, p_token)
    WHERE key = p_key;
  END IF;
  IF v_mode = 0 THEN
    -- Account mode: the record is replaced by what the holder computed
    -- from its read at p_base. Walk the current version and p_base down
    -- to their common ancestor (step the larger; parents are smaller):
    -- what the current side wrote leaves the record, what p_base's side
    -- wrote comes back into it. Empty when the lock worked.
    v_out := v_current;
    v_back := p_base;
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
    UPDATE lockbench_store_accounts SET
      balance          = p_new_balance,
      version          = v_current + 1,
      overdrawn        = overdrawn OR p_new_balance < 0,
      applied_debits   = applied_debits + v_debit,
      in_record_debits = in_record_debits + v_debits + v_debit
    WHERE id = p_account;
    INSERT INTO lockbench_store_versions (account, version, parent, payment, debit)
    VALUES (p_account, v_current + 1, p_base, p_payment, p_debit);
  ELSE
    -- Payment mode: an atomic debit, computed from the current version,
    -- so the record keeps everything it held.
    UPDATE lockbench_store_accounts SET
      balance          = balance - p_debit,
      version          = version + 1,
      overdrawn        = overdrawn OR balance - p_debit < 0,
      applied_debits   = applied_debits + v_debit,
      in_record_debits = in_record_debits + v_debit
    WHERE id = p_account;
  END IF;
  UPDATE lockbench_store_payments SET applications = applications + 1, in_record = in_record + 1
  WHERE id = p_payment;
  RETURN QUERY SELECT true, false;
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

TRUNCATE lockbench_store_config, lockbench_store_accounts, lockbench_store_versions,
  lockbench_store_payments, lockbench_store_lock_keys, lockbench_store_processed,
  lockbench_store_processed_unguarded;
`
