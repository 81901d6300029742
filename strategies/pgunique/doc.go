// Package pgunique registers `pg-unique`: no lock at all, the answer of the
// article this benchmark comes from to "when you don't need a distributed
// lock". Each delivery of a payment is one transaction on the Postgres store,
// run by the instance over its own connection as an app would:
//
//	BEGIN;
//	INSERT INTO processed (payment) VALUES ($1) ON CONFLICT DO NOTHING;
//	-- only if a row was inserted: the work, then
//	UPDATE accounts SET balance = balance - $amount
//	  WHERE id = $account AND balance >= $amount;
//	COMMIT;
//
// The unique constraint on the marker does what a lock would: a second
// delivery's INSERT waits for the first transaction, then finds the marker
// (it committed) and does nothing, or inserts it (it rolled back). The
// guarded debit cannot overdraw. The SQL lives in the store
// (loadgen/store.Postgres.Process), because the store's own bookkeeping —
// the counts that judge the run — must happen in that same transaction for
// the judgement to stay exact.
//
// The strategy object itself only checks, when it is built, that the
// database answers (within pgutil.PingTimeout), so that a down server is
// reported at once like every other strategy's; Acquire returns
// strategies.ErrTransactional. The price of pg-unique is the database's:
// every delivery is a transaction with two writes on the store's server.
package pgunique
