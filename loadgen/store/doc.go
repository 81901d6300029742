// Package store is the protected resource of lockbench's tiny bank, and the
// judge of what happened to it (SPEC §1–§2).
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
// would. In account mode a write replaces the record with what the holder
// computed from its read; a write based on a stale read silently drops the
// debits and marks written since (lost_updates, and lost for payments whose
// worker was told they were applied). In payment mode the debit is atomic but
// the balance check uses the holder's read, so two payments of one account
// can overdraw it.
//
// The store is reached over a connection like a real storage service: Memory
// is served by the coordinator (Serve) and instances dial it (Dial);
// Postgres does the same in SQL.
package store
