// Package queue registers `queue`: no lock at all, the article's third
// answer to "when you don't need a distributed lock", a message queue with
// exactly-once delivery, on NATS JetStream.
//
// Each of a payment's deliveries publishes the payment (id, account,
// amount) to one stream with "pay-<id>" as its message id (Nats-Msg-Id):
// the stream drops the copies published within its duplicate window, so
// the broker holds each payment once. Messages are partitioned by lock key
// (the account's, or the payment's with --lock-key payment): a subject per
// shard, FNV-1a of the key modulo the partitions, and one durable pull
// consumer per shard shared by every instance (work-queue retention) with
// MaxAckPending 1, so that two payments of one shard are not processed at
// once while any instance can take over a shard. The delivery whose
// publish was kept then takes the shard's next message (its own, or an
// earlier one's) and processes the payment it carries against the store
// as a lock's critical section is processed (read, work, write), then acks
// it. The fencing token is the consumer's delivery sequence, which grows
// on every delivery, redeliveries included (above the consumer's
// creation time: see Lease.Token).
//
// The load generator finds this path by type assertion: Queue.Enqueue
// publishes, Queue.Next takes the next message, and the lease carries its
// payment (Lease.Carries) and says whether it is a redelivery
// (Lease.Redelivered). Acquire on its own makes the queue a lock: it
// publishes a turn message and waits for the shard's next message, so that
// the conformance suite's lock cases apply.
//
// # Settings
//
//   - Ack deadline: the scenario's TTL (Config.TTL). The stream's name
//     holds it (LOCKBENCH_2000MS), because a consumer has one ack deadline
//     for all its clients.
//   - Partitions: DefaultPartitions (16), or ?partitions=N in the URL.
//   - Duplicate window: DefaultDuplicates (2 minutes), or ?duplicates=D.
//   - Stream name prefix: DefaultStream, or ?stream=NAME.
//
// The URL may carry a user and password (nats://user:pass@host:4222) or a
// token (nats://token@host:4222); nats.go uses them, and errors never
// quote the URL.
//
// # Caveats
//
// The broker's dedupe covers the publish, not the processing. A consumer
// that pauses or works past its ack deadline has its message redelivered
// to another instance, which processes it too: double processing unless
// the store refuses the stale holder's write by its token. That is the
// verdict lockbench shows (pause and slow unsafe with fencing off, safe
// with it on).
//
// A restart of the NATS server lockbench started comes back without its
// store (servers.NATSServer.Start): messages not yet processed are lost
// (unprocessed payments), the duplicate window is gone (a late delivery of
// a processed payment is published again; the store's processed check
// catches it) and the consumers are created again. Their delivery
// sequences start over at 1, which is why a token is the sequence added
// to the consumer's creation time (Lease.Token): tokens keep growing
// across the restart, and the fenced store does not refuse the new
// holders.
//
// A pull request cannot be withdrawn, and a message the server hands to one
// nobody listens to any more is in flight with nobody to process it until
// its ack deadline. So Next never abandons one: it sends short ones
// (FetchSlice) and waits each out, and a cancelled Next returns up to
// FetchSlice late. A pull request nobody listened to (the server answers
// "no responders") handed nothing out: Next creates the shard's consumer
// again, or binds to it, and asks again a few times before it reports the
// server unavailable. That happens when the consumer was deleted, and, on
// nats-server 2.15, when two instances create it at once: the server
// answers the second create before the new consumer listens.
//
// Every run must start with an empty stream (its payment ids repeat the
// previous run's): the load generator's first instance calls Reset. Each
// kept publish takes one message, which keeps the shards drained, except
// when a delivery gives up waiting (its message stays behind, and every
// later delivery of the shard takes the one before its own); the load
// generator's last instance takes what is left once all have stopped
// (Leftover), so that such a message counts as processed late rather than
// not at all.
//
// Conformance cases that do not apply: quorum (one server), failover
// (Redis only), extend (a message's ack deadline is not extended here:
// nats.go's InProgress would be the watchdog), transaction-down (not a
// transactional strategy).
package queue
