package store

// postgresSchema creates the store's tables and functions idempotently and
// empties the tables. It runs inside Reset's transaction. It brings tables
// left by an older lockbench to these columns and drops functions whose
// result changed (CREATE OR REPLACE cannot change one), so that a shared
// database keeps working across versions. The versions table, the lock
// order and the clock reads are explained in the package doc (The Postgres
// store).
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
