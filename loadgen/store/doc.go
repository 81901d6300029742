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
// # Memory over long runs
//
// A run announces its payments as it offers them, a batch at a time
// (Offerer), rather than listing them in the Setup, and says how many
// critical sections a payment has at most (Setup.Deliveries). Postgres
// creates a batch's rows then; Memory tracks a payment from its first
// Enter and, once all of its Finishes are in and no write still to come
// can walk the record versions it wrote, folds it into its counts and
// forgets it (see Release, below), so its memory grows with the accounts
// and the payments in flight, not with the run's length. The counts stay
// exact: the randomized test holds every store, releasing as it goes, to
// a brute-force reference that keeps everything. Caveat: a payment one of
// whose deliveries entered and never finished (an instance killed inside
// its critical section), or never entered (not acquired), stays tracked to
// the end, and so do the versions of an account that always has a holder
// inside.
//
// # The Memory store
//
// Memory keeps its accounts in a slice indexed by account, so that a run
// over a million accounts costs the workers no hashing and the garbage
// collector no pointers to chase. Its payments live in one small hash
// table per shard (paymentTable) from their first Enter until nothing
// still in flight can refer to them (Release, below), so that its memory
// grows with the accounts and the payments in flight, not with the
// payments offered.
//
// An operation touches one account (and, in payment mode, a payment of
// that account), so sharding by account keeps every judgement exact.
// Enter and Finish take one shard's mutex and nothing else; Reset and
// Counts take all of them. A store-wide RWMutex read-locked by every call
// would move one cache line between the cores twice a call.
//
// A Finish writes its shard's mutex, its payment table's count, its
// applications and, once the payment is judged, its processed and
// duplicates: all five are in the shard's first 64 bytes, and each shard
// starts a cache line, so that a lock cycle moves one line of the shard
// between the cores, not two or three (TestShardHotLine). A shard is 512
// bytes: 64 of them make Memory, whose first field they are, larger than
// 32 KB, and the allocator starts an object that large on a page of its
// own; a smaller one with pointers it places 8 bytes into its slot, after
// a header.
//
// In account mode a shard appends its accounts' record versions to one
// log, each linked to its account's version before it, rather than to a
// slice per account: the append then writes to a cache line the shard
// wrote a moment ago, not to one of a random account's (a cache miss every
// Finish).
//
// The payment table uses open addressing with linear probing and
// backward-shift deletion: removing leaves no tombstone, so a table whose
// payments come and go (every payment of a run passes through one) stays
// as large as the most it held at once. A Go map would also serve, at the
// cost of a pointer-rich bucket array and a hash call per lookup. Whether
// a slot holds a payment is a flag in the padding of the slot's own cache
// line; a separate array of flags would be a second line, and a second
// cache miss, at each lookup of a lock cycle. A table starts at 4 slots
// (minTableSize): a shard rarely holds more payments than that at once (a
// run's workers spread over 64 shards), and each slot is a cache line. At
// 64 slots a new payment's slot would be a random one of 4,096 lines over
// the store, a cache miss at nearly every Enter; at 4, the lines stay warm.
//
// # Record versions and release
//
// A write in account mode is computed from base, the version its holder
// read, and lands on the account's current version. A version holds the
// applications on its chain of parents down to the floor (below), so
// walking the current version and base down to their common ancestor
// (parents are smaller versions: step the larger) visits exactly the
// applications that leave the record (on the current version's side) and
// those that come back into it (on base's side: a write from a read older
// than an overwrite resurrects what it had read). When the lock works,
// base is the current version and nothing is walked. Memory finds the
// versions in the shard's log by the links from each to the account's
// version before it (Memory.rebase); the two walks only move down, never
// below the floor, since every version in the log descends from it.
// Postgres walks the same chains in lockbench_store_versions
// (lockbench_store_walk).
//
// Release. A payment's counts (processed, duplicates, lost) are final once
// nothing can change its applications or how many of them its account's
// record holds: every one of its deliveries has finished (Setup.Deliveries
// Finishes), and no write still to come can walk the record versions it
// wrote (AccountMode). A write walks versions above the common ancestor of
// the current version and the one its holder read; every holder still in
// flight read a version no older than the one the account had when it was
// last left with no holder inside (its floor), and every version written
// since descends from the floor. So once an account is left with no
// holder inside, every version it has is out of reach of any write to
// come: they are dropped from the log, and the payments that wrote them
// and have had all their Finishes are folded into the shard's counts and
// forgotten. With a working lock that is every Finish. A Finish whose
// BaseVersion is below the floor (no holder in flight read it) is refused
// with errBaseReleased.
//
// # The Postgres store
//
// Postgres's tables and functions are prefixed lockbench_store_. Enter and
// Finish are each one round trip to a PL/pgSQL function, so each runs in
// one READ COMMITTED transaction whose row locks last only for that call:
// nothing holds across Enter and Finish, which is exactly the span the
// lock under test must protect. Holding a row lock or using serializable
// isolation across that span would make the store itself the lock and
// hide the strategy's failures. Each lock key's row numbers its Enters
// (entries: the holder's entry number, by which a write is judged
// superseded) and its events (events: the history's seq).
//
// The Enter and Finish functions are VOLATILE, so under READ COMMITTED
// every statement in them takes a fresh snapshot: once a statement has
// waited for a row lock, the next one sees what the previous holder of
// that lock committed. Enter and Finish take the lock key row first, and
// Finish then takes the account row and only then that account's payment
// rows: one order, so no deadlock. Each reads the clock once, with the
// key's row locked, so that a key's events are timed in the order the
// store took them (their seq) and a window of exposure is exactly the
// difference of the two events' times.
//
// lockbench_store_versions holds, in account mode, one row per version of
// an account's record: the version it was computed from (parent) and the
// application written with it (payment, debit). Finish walks two chains
// of them (Record versions, above) in a loop of primary-key lookups inside
// one call. It is a table rather than an array column because an array
// would be rewritten whole on every write to a hot account. Payment mode
// needs no rows there: every write's parent is the version before it.
//
// The counters live on the rows they are about (overlaps and stale writes
// on the lock key; the overdrawn flag and the debits applied and still in
// the record on the account; applications and how many of them are in the
// account's record on the payment), so that no single counter row
// serialises every worker; Counts sums them.
//
// History (SetRecorder): the functions return the event's seq (the key's
// events counter) and the store's time (clock_timestamp(), read once with
// the key's row locked, in Unix ns to the microsecond), and Enter and
// Finish send the event to the recorder after the call returns. The row
// lock is released by then, so the events of one key can reach the
// recorder out of seq order (their seq is right); the lane, a hash of the
// key, keeps the recorder's calls of one lane apart.
//
// # Wire protocol
//
// The coordinator serves the store to instance processes (and agents) as
// a real storage service would be: small binary frames, pipelined on one
// connection per client. Each caller's request carries an id; the server
// runs every request as it arrives (a slow call, as a Postgres-backed
// store's, never holds up the others) and answers by id. Both sides
// coalesce what is ready into one write: a caller that finds a write in
// flight leaves its frame for the writer, who sends everything queued when
// its write returns. So under load a write and a read carry many calls,
// and a critical section still costs exactly its two round trips of
// latency.
//
// A connection opens with protoMagic, the protocol version (the server
// accepts only its own) and a token (u16 length, bytes; empty for none),
// which a server started with one (ServeOptions.Token: instances on
// agents, over TCP) checks. A request is a u32 id, an op byte, the lock
// key (u16 length, bytes), then the op's fixed fields; a response is the
// u32 id, a status byte, a u16 length and the body (the op's fixed result,
// or the error message); all little-endian. Every Enter's fixed fields end
// with the holder's worker. Enter's result ends with the slow order
// (EnterResp.Slow), so that a fault's order reaches an instance process in
// the answer to the very Enter it caught, and the entry number
// (EnterResp.Entry), which ends Finish's fixed fields. A Finish answer is
// a flags byte: applied, stale rejected, the server's sync flag
// (finishSyncFlag) and the refusal (FinishResp.Refused) in bits 3–4.
//
// The sequenced ops (Client.Sequence, Sequencer): enterSeq and finishSeq
// are one-way (no answer; their id is 0), and enterSeqWait is answered as
// an Enter once it is applied in order. Their fixed fields start with the
// event's sequence number and carry its time (Unix ns). A sequenced client
// sends only sequenced ops. The arrival-ordered ops are below (Arrival
// order).
//
// # The sequenced store
//
// The sequenced store (a prototype, loadgen.Options.StoreTransport; see
// docs/seq-store.md): local instance processes share a page of memory
// with the coordinator (SeqPage) whose counter numbers every Enter and
// Finish they send; a sequenced Client sends them one-way, and a
// Sequencer behind the served store applies them in number order, so a
// critical section no longer waits on the coordinator. Caveat: the
// numbers are taken when the holder sends, so a fault's hook cannot hold
// an event back, and the counts lag the events until Sequencer.Settle.
//
// Number order is a valid order to judge in: a holder takes its Finish's
// number before it releases the lock, and the next holder takes its
// Enter's number after it acquired the lock, so every pair of events the
// lock orders is numbered in that order. Events the lock does not order
// (a broken lock's two holders) are judged in the order they were
// numbered, which is an order they could have happened in.
//
// A number taken by a process that died before sending it is a gap: it is
// skipped once every open connection has delivered a higher number (each
// connection delivers in number order, so none of them can still send
// it), or once no connection is open. An idle connection would hold such
// a gap open until it sent something, so when application has not moved
// for stallEvery with events pending, the sequencer asks each open
// connection that has delivered nothing beyond the missing number, and was
// not asked since it last delivered, for a mark (Sequencer.watch). The
// client answers with a number taken then, under its queue's lock, so
// after everything it had taken before: once the mark is in, the
// connection has sent all it will send below it, and the gap closes if it
// was not that connection's. A stopped process answers once it is
// continued.
//
// The events waiting behind a missing number are bounded
// (Sequencer.Bound): past the bound the sequencer fails, rather than hold
// back the others or grow without limit. The number held back is most
// often a stopped process's (the pause fault: it took the number, and its
// writer had not sent the frame when SIGSTOP landed). Blocking the other
// connections' readers until it resumes would not bound anything: their
// frames would pile up in their own processes' queues instead (their
// one-way sends do not wait). Making those sends wait as well would bound
// the memory, but the other processes' holders would then be held at
// their Enters, before taking their numbers, until the stopped one
// resumed: a second holder would be numbered after the paused holder's
// Finish, and the overlap the fault exists to produce would never be
// judged. (It does not deadlock: the connection holding the missing number
// is never the one held back, since its next frame is that number. It
// changes what is measured.) Failing keeps what is judged exact, and
// memory bounded, at the price of a run too long behind a stopped process;
// the synchronous transport has no such limit. DefaultPendingBound, 2²⁰
// events, is some 230 MB at its fullest (215 bytes an event, measured with
// an 8-byte lock key), and at the sequenced store's 60,000 events/s on two
// cores (setnx, closed loop) some 17 s of the other processes' load behind
// one stopped process.
//
// The waiting events are held in a ring indexed by number (seqRing) that
// grows by doubling and never shrinks: a run's span is what its
// connections' batches and a stopped process leave between them. A map
// costs twice the coordinator's CPU per event: a hash, an insertion and a
// deletion of an event of some 200 bytes, each time.
//
// # Arrival order
//
// Instances on agents cannot take numbers from a page the coordinator
// shares; they use the arrival-ordered ops instead (Client.Arrive,
// rpc_arrive.go): a critical section in one round trip instead of two.
// Its Enter (opEnterArrive) is one-way: the server applies it when its
// reader takes the frame, in the order frames arrive, and keeps the read
// under the section's slot on that connection. Its Finish
// (opFinishArrive) is answered once applied: the server computes the
// write from the kept read (WriteFor, as worker.critical does on the
// synchronous path) and judges it. The holder releases its lock only once
// its Finish is answered, so whatever the lock orders after the section
// (the next holder's Enter, sent after it took the lock) arrives after the
// Finish was applied: arrival order is a valid order of the events, with
// no clock shared between hosts and no sequence page. The judged section
// runs from the Enter's arrival to the Finish's application: the holder's
// work, less the Enter's one-way trip (an overlap shorter than that trip
// may be missed; none is invented). Duplicates are counted exactly.
//
// Every Finish answer (opFinish's too) carries the server's sync flag
// (ServeOptions.Sync); while it is set, an arrival client sends its Enters
// as ordinary waiting ones (opEnter), which a fault's trap can catch and
// whose answer carries a slow order, and finishes them with ordinary
// Finishes. A client learns the flag at its next Finish answer: one
// critical section late at worst.
//
// # Pinned TLS
//
// ListenPinned is the store link to instances on agents: the coordinator
// hands the address to each agent over the agent link (TLS, the agent
// checked against the user's CA), and the instance, dialling it, accepts
// only the certificate the address names. So the store's frames are
// encrypted and the instance knows it reached the coordinator that started
// it, with no certificate for the user to issue; the instance is known to
// the coordinator by the token it presents, as without TLS.
package store
