// Package pgoptimistic registers `pg-optimistic`: no lock at all, an
// optimistic update of the account row with a version check. Each attempt
// at a delivery is one transaction on the Postgres store, at READ
// COMMITTED, run by the instance over its own connection as an app would:
//
//	BEGIN;
//	SELECT balance, version FROM accounts WHERE id = $account;
//	SELECT EXISTS (SELECT 1 FROM marks WHERE payment = $payment);
//	-- only if not yet processed: the work, then
//	UPDATE accounts SET balance = $read_balance - $amount, version = version + 1
//	  WHERE id = $account AND version = $read_version;
//	-- zero rows: a conflict; ROLLBACK and try again
//	INSERT INTO marks (payment) VALUES ($payment);  -- no unique constraint
//	COMMIT;
//
// The processed mark is written only after the version check succeeded, in
// the same transaction, so the check is the whole protection: of two
// deliveries that read the same version, one commits and the other's update
// matches no row. Every failed version check counts once in `conflicts`;
// the delivery then tries again with lockbench's retry policy (jittered
// exponential backoff, strategies.Retry's defaults: 1 ms up to 50 ms)
// until --acquire-timeout is spent, which counts once in not_acquired.
// --ttl does not apply.
//
// The SQL lives in the store (loadgen/store.Postgres.Process), because the
// store's bookkeeping must happen in the same transaction. The strategy
// object only checks, when it is built, that the database answers; Acquire
// returns strategies.ErrTransactional.
//
// Its price shows under contention: conflicts, and the work they throw
// away, grow as accounts get hotter. The control (store.TxReq.Unguarded:
// the same update without the version check) is in loadgen/store's tests.
package pgoptimistic
