// Package store is the protected resource of lockbench's tiny bank, and the
// judge of what happened to it (the counts of results.Summary).
//
// Workers talk to it twice per critical section: Enter (after taking the
// lock: read "processed?", the balance and the record version) and Finish
// (before releasing: write, or just leave). Because the store sees every
// entry and exit, it counts overlaps of holders of one lock key; because it
// sees every fencing token, it counts stale writes (rejected when fencing is
// on, accepted and counted when it is off).
//
// The model: each account is one record holding its balance and the ids of
// the payments applied to it, as a document store or a row with a JSON column
// would. Every write makes a new version of the record, computed from a
// parent version: in account mode the one the holder read (BaseVersion),
// and the new record replaces whatever is there; in payment mode the
// current one, since the debit is atomic. A version holds its parent's
// payment applications plus the one written with it; the account's record
// is its latest version. So a write based on a stale read silently drops
// what was written since, and brings back what it read even if a write in
// between had dropped it. A payment is processed (what Enter reads, and
// what the final state holds) while one of its applications is in its
// account's record; lost counts payments applied whose worker was told so
// but that no record holds. lost_updates is a net count, in payments: the
// debits the store applied minus the debits the records still hold, so a
// debit dropped twice counts once and one brought back counts none. In
// payment mode nothing is dropped, but the balance check uses the holder's
// read, so two payments of one account can overdraw it.
//
// The store is reached over a connection like a real storage service: Memory
// is served by the coordinator (Serve) and instances dial it (Dial);
// Postgres does the same in SQL.
//
// Memory over long runs: a run announces its payments as it offers them,
// a batch at a time (Offerer), rather than listing them in the Setup, and
// says how many critical sections a payment has at most
// (Setup.Deliveries). Postgres creates a batch's rows then; Memory tracks
// a payment from its first Enter and, once all of its Finishes are in and
// no write still to come can walk the record versions it wrote, folds it
// into its counts and forgets it (see Memory), so its memory grows with
// the accounts and the payments in flight, not with the run's length. The
// counts stay exact: the randomized test holds every store, releasing as
// it goes, to a brute-force reference that keeps everything. Caveat: a
// payment one of whose deliveries entered and never finished (an instance
// killed inside its critical section), or never entered (not acquired),
// stays tracked to the end, and so do the versions of an account that
// always has a holder inside.
//
// The sequenced store (a prototype, loadgen.Options.StoreTransport; see
// docs/seq-store.md): local instance processes share a page of memory
// with the coordinator (SeqPage) whose counter numbers every Enter and
// Finish they send; a sequenced Client sends them one-way, and a
// Sequencer behind the served store applies them in number order, so a
// critical section no longer waits on the coordinator. Caveat: the
// numbers are taken when the holder sends, so a fault's hook cannot hold
// an event back, and the counts lag the events until Sequencer.Settle.
package store
