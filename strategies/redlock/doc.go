// Package redlock is the Redlock algorithm over N independent Redis masters
// (default 5), written after go-redsync/redsync:
//
//  1. Pick a unique owner value and note the time.
//  2. Send SET key value NX PX ttl to every node in parallel, each bounded by a
//     short per-node timeout, so one slow or dead node costs one timeout, not
//     one per node (unlike the common recipe that asks the nodes one after another).
//  3. The lock is taken if a quorum N/2+1 said yes and some validity is left:
//     validity = ttl − elapsed − drift, with drift = ttl×1% + 2ms for clock
//     rate differences between the nodes (redsync's factor).
//  4. Otherwise undo: compare-and-delete, in parallel, on every node that may
//     hold the value: those that granted and those that failed or timed out
//     (the SET may have landed after all). Nodes that answered "held" are
//     skipped: they hold someone else's value, and asking them again only
//     adds load while contenders poll.
//
// A failed round returns strategies.ErrNotAcquired, for the caller to retry
// after a random delay as Redlock prescribes (strategies.AcquireRetry), unless
// so many nodes are down (refusing connections, erring, not merely slow) that
// no quorum is possible: then it returns strategies.ErrUnavailable.
//
// Release compare-and-deletes on every node in parallel.
//
// Leases implement strategies.Extender, as redsync's Extend does: one round
// of the compare-and-extend script on every node, counted like Acquire's
// votes. A quorum of nodes that still held the lease's value extends it, by
// the validity left after the round (ttl − elapsed − drift); a majority that
// no longer had it means strategies.ErrNotOwner, and the leftover keys are
// deleted as Release would. An extended lease is still the lock: a key with
// the lease's unique value never comes back once gone, so each node that
// still holds it has held it since the lease was granted, and while a quorum
// holds it no other contender can win one.
//
// Caveats, which lockbench's faults demonstrate (Kleppmann, "How to do
// distributed locking"):
//   - Like setnx it is unsafe under a process pause or slow work longer than
//     the validity, and it issues no fencing token (Token is 0).
//   - It assumes bounded clock drift: a node whose clock jumps forward expires
//     the key early, and a node restarted without persistence forgets it;
//     either can let a second contender reach a quorum while the first still
//     holds the lock.
//   - It survives N−quorum dead nodes (2 of 5), at the price of N requests
//     per round, each round as slow as its slowest node (up to the per-node
//     timeout), and of split votes under contention: contenders that each
//     win a minority all undo and retry.
package redlock
