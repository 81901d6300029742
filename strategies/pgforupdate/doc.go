// Package pgforupdate registers `pg-for-update`: no distributed lock, the
// account row's own lock inside the payment's transaction, as most teams
// that move money do it. Each delivery of a payment is one transaction on
// the Postgres store, at READ COMMITTED, run by the instance over its own
// connection as an app would:
//
//	BEGIN;
//	SELECT set_config('lock_timeout', '<--acquire-timeout>', true); -- SET LOCAL
//	SELECT balance, version FROM accounts WHERE id = $account FOR UPDATE;
//	SELECT EXISTS (SELECT 1 FROM marks WHERE payment = $payment);
//	-- only if not yet processed: the work, then
//	INSERT INTO marks (payment) VALUES ($payment);  -- no unique constraint
//	UPDATE accounts SET balance = $read_balance - $amount, version = version + 1
//	  WHERE id = $account;                          -- or declined: balance kept
//	COMMIT;
//
// The processed mark has no unique constraint, so the row lock is the whole
// protection: a second delivery of the payment waits on the account row,
// then reads the mark the first committed. The debit is computed from the
// balance read under the lock (a read-modify-write, not an atomic
// decrement), so a missing lock would show as lost updates too. A lock
// timeout (SQLSTATE 55P03) is a give-up, counted in not_acquired. --ttl does
// not apply: the row lock lasts as long as the transaction.
//
// The SQL lives in the store (loadgen/store.Postgres.Process), because the
// store's bookkeeping — the counts that judge the run — must happen in the
// same transaction. The strategy object only checks, when it is built, that
// the database answers; Acquire returns strategies.ErrTransactional.
//
// Its price shows under contention: deliveries to a hot account queue on its
// row lock. The control that proves the store catches a transaction that
// does not exclude (store.TxReq.Unguarded: the same transaction without FOR
// UPDATE) is in loadgen/store's tests.
package pgforupdate
