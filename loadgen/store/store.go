package store

import (
	"context"
	"errors"
	"time"
)

// The errors both stores return for calls they cannot judge (Postgres maps
// its SQLSTATEs to these), so that callers and tests see one store
// whichever is behind them. Such a call changes nothing.
var (
	errUnknownPayment     = errors.New("store: unknown payment or account")
	errFinishWithoutEnter = errors.New("store: Finish without Enter")
	errNegativeBase       = errors.New("store: negative BaseVersion")
	// errBaseAhead: an account-mode write computed from a version the
	// record has not reached yet; no holder can have read it.
	errBaseAhead = errors.New("store: BaseVersion ahead of the record")
	// errBaseReleased: an account-mode write computed from a version
	// older than any holder in flight read (Memory has released it; see
	// Memory). A worker writes from the version its Enter read, which is
	// never that old.
	errBaseReleased = errors.New("store: BaseVersion older than any holder in flight read")
	// errOfferOrder and errOfferListed: Offer out of order, or for a
	// bank whose payments the Setup listed.
	errOfferOrder  = errors.New("store: payments offered out of order")
	errOfferListed = errors.New("store: Offer on a bank whose payments the Setup listed")
)

// ErrLockTimeout is Transactor.Process's error when its transaction waited
// for a row lock longer than TxReq.LockTimeout (SQLSTATE 55P03): a give-up,
// not a server failure.
var ErrLockTimeout = errors.New("store: lock wait timed out")

// ErrOutcomeUnknown is Transactor.Process's error when its COMMIT failed
// on the way (a cut connection, a timeout): the database may have
// committed or not, and nobody on this side can tell.
var ErrOutcomeUnknown = errors.New("store: the commit's outcome is unknown")

// Mode says what the lock key guards, and so how the store applies a debit.
type Mode int

const (
	// AccountMode: the lock key is the account. The worker does a
	// read-modify-write of the account record (balance and the ids of the
	// payments applied to it); a write based on a stale read overwrites
	// whatever was written since.
	AccountMode Mode = iota
	// PaymentMode: the lock key is the payment. It only guards the
	// "processed?" check; the store debits atomically (balance -= amount),
	// so two payments of one account can still overdraw it.
	PaymentMode
)

// Setup describes the bank before a run.
type Setup struct {
	Mode Mode
	// Fencing makes the store reject writes with a stale token.
	Fencing bool
	// Strict, with Fencing, also rejects a write whose token is not newer
	// than the last applied write's to its lock key (the WHERE
	// fencing_token < $new): a token handed out twice, as a counter that
	// lost its last increments in a failover does.
	Strict bool
	// Balances is the opening balance of each account 0..len-1.
	Balances []int64
	// Payments and PaymentAccount, when PaymentAccount is set, list the
	// bank's payments up front: payments 0..Payments-1, PaymentAccount
	// mapping each to its account; the stores refuse calls for any other
	// payment. Tests list them. A run leaves both empty and announces its
	// payments as it offers them, in bounded batches (Offerer), so that
	// nothing in the store is sized by the payments of the whole run.
	Payments       int
	PaymentAccount []int32
	// Deliveries, when > 0, is the most critical sections (Finishes) any
	// payment has: a run's deliveries per payment. Memory releases a
	// payment's state once it has had that many and nothing in flight
	// can change its counts, so its memory stays with the payments in
	// flight; a caller that may enter a payment more often (a
	// redelivering queue) must leave it 0, and then every payment is
	// kept to the end. A Finish beyond the count is judged as that of a
	// payment never seen.
	Deliveries int
}

// Offerer is a store told of the payments as they are offered: Offer says
// that payments first, first+1, … (in order from 0, without gaps) exist,
// of accounts[i], before any delivery of them. Postgres creates their rows
// (one COPY per batch); Memory, which tracks a payment from its first
// Enter, only counts them. Counts' Unprocessed is what was offered and
// never applied. A bank whose Setup listed its payments refuses Offer.
type Offerer interface {
	Offer(ctx context.Context, first int64, accounts []int32) error
}

// EnterReq opens a critical section: the holder took the lock and reads.
type EnterReq struct {
	LockKey string
	Token   int64 // fencing token, 0 when the strategy has none
	Payment int64
	Account int32
	// Instance is the instance the holder belongs to (for fault hooks),
	// Worker the instance's worker (for the history).
	Instance int
	Worker   int32
	// AtNs is when the holder entered, in Unix nanoseconds; 0 for now. A
	// sequenced store (Sequencer) applies an Enter after the event, and
	// Memory times overlap windows from it.
	AtNs int64
	// Waiting is set when the holder waits inside its Enter for the
	// answer: every synchronous Enter (the workers set it; the served
	// store's Enter op does), and a sequenced client's Enter while a
	// fault's trap is armed (SeqPage's sync flag). A sequenced client's
	// one-way Enter leaves it false. Traps spring only on waiting Enters:
	// only then is the holder certainly still inside when the trap acts.
	Waiting bool
}

// EnterResp is what the holder read.
type EnterResp struct {
	Processed bool
	Balance   int64
	// Version is the account record's version, for read-modify-write.
	Version int64
	// Slow is a fault's order that this critical section's work last this
	// long (the slow fault); 0 for none. The stores leave it 0; the
	// coordinator's fault hooks fill it in (loadgen's FaultEnv.SlowNext),
	// so that it reaches an instance over the wire as well as in-process.
	Slow time.Duration
	// Deferred is set by a sequenced client (Client.Sequence) that sent
	// the Enter one-way: the read is not known to the holder, only to the
	// coordinator, which computes the write itself (WriteFor). The holder
	// finishes with FinishReq.Deferred and Slot.
	Deferred bool
	// Slot names the deferred critical section on its connection.
	Slot uint32
	// Entry is the holder's entry number: the store numbers the Enters
	// of each lock key 1, 2, 3, … in the order it takes them (Memory's
	// counter is 32 bits and wraps: compare as serial numbers). The
	// holder sends it back with its Finish (FinishReq.Entry); a holder is
	// superseded when the key has had a later Enter by the time the
	// store takes its write.
	Entry int64
}

// FinishReq closes the critical section, writing when Apply is set.
type FinishReq struct {
	LockKey string
	Token   int64
	Payment int64
	Account int32
	// Apply is false when the holder found the payment already processed
	// and writes nothing.
	Apply bool
	// Debit is the amount taken from the account; 0 for a declined payment
	// (insufficient funds), which is still recorded as processed.
	Debit int64
	// BaseVersion and NewBalance carry the read-modify-write (AccountMode).
	BaseVersion int64
	NewBalance  int64
	// AtNs is when the holder left, in Unix nanoseconds; 0 for now (see
	// EnterReq.AtNs).
	AtNs int64
	// Entry is the entry number the holder's Enter returned
	// (EnterResp.Entry): the store judges a write stale by it.
	Entry int64
	// Deferred, Slot and Amount finish a deferred Enter (EnterResp.Deferred):
	// the coordinator computes Apply, Debit, BaseVersion and NewBalance
	// from the read it stashed under Slot and the delivery's Amount.
	Deferred bool
	Slot     uint32
	Amount   int64
}

// WriteFor fills in fin's write (Apply, Debit, BaseVersion, NewBalance)
// for a holder that read read and pays amount: apply unless the payment
// was already processed; debit when the balance covers the amount, else
// decline (still processed). The worker's synchronous path and the
// sequenced store's coordinator side both compute the write with it, so
// the two paths cannot judge differently.
func WriteFor(fin FinishReq, read EnterResp, amount int64) FinishReq {
	fin.Apply, fin.BaseVersion, fin.Entry = !read.Processed, read.Version, read.Entry
	fin.Debit, fin.NewBalance = 0, 0
	if fin.Apply {
		fin.NewBalance = read.Balance
		if read.Balance >= amount {
			fin.Debit = amount
			fin.NewBalance = read.Balance - amount
		}
	}
	return fin
}

// FinishResp tells the holder what happened to its write.
type FinishResp struct {
	Applied bool
	// StaleRejected is set when fencing refused the write: its token was
	// older than one the store had already seen for the lock key, or,
	// with Setup.Strict, no newer than the last applied write's. Refused
	// says which of the counts it went to.
	StaleRejected bool
	Refused       Refusal
}

// Refusal says why the store refused a write (fencing), or, for an
// applied write, which of the token counts it went to.
type Refusal uint8

const (
	// NotRefused: applied, and counted in none of the others.
	NotRefused Refusal = iota
	// Stale: the holder was superseded (Counts.StaleRejected or
	// StaleAccepted).
	Stale
	// TokenRegressed: not superseded, but its token was older than the
	// newest the key had seen (Counts.TokenRegressed).
	TokenRegressed
	// TokenReused: not superseded, its token no newer than the last
	// applied write's (Counts.TokenReused).
	TokenReused
)

// String is the history's name of r.
func (r Refusal) String() string {
	return [...]string{"", "stale", "token_regressed", "token_reused"}[r]
}

// judgeWrite judges a write to a lock key, the same in both stores (see
// Counts): superseded when the key has had a later Enter; refused when
// fencing is on and the token is older than the newest the key has seen
// (maxToken) or, strict, no newer than the last applied write's. It
// returns whether the write is refused and the count it goes to.
func judgeWrite(s Setup, superseded bool, token, maxToken, lastApplied int64) (refused bool, r Refusal) {
	older := token > 0 && token < maxToken
	reused := token > 0 && token <= lastApplied
	refused = s.Fencing && (older || s.Strict && reused)
	switch {
	case superseded:
		r = Stale
	case older:
		r = TokenRegressed
	case reused:
		r = TokenReused
	}
	return refused, r
}

// TxReq is one delivery processed in one transaction of the store's own
// database, with no lock around it (Transactor).
type TxReq struct {
	Payment int64
	Account int32
	Amount  int64
	// Kind is what the transaction does to exclude a second delivery.
	Kind TxKind
	// LockTimeout is TxRowLock's lock_timeout, the longest it waits for
	// the account row; 0 for the server's (none by default).
	LockTimeout time.Duration
	// Unguarded drops the transaction's protection: the processed
	// marker's unique constraint (TxUniqueMarker), FOR UPDATE
	// (TxRowLock), or the version check (TxOptimistic). It is the control
	// that proves the store catches a transaction that does not exclude
	// its duplicates. Tests only.
	Unguarded bool
	// Leave, when set, is called once the transaction's write is done,
	// just before its commit: the critical section ends with the commit,
	// which releases the row lock or the marker, so the caller's
	// bookkeeping of the section ends there, not after a gap.
	Leave func()
}

// TxKind names a transactional strategy's transaction (Transactor).
type TxKind int

const (
	// TxUniqueMarker: the processed marker's INSERT … ON CONFLICT DO
	// NOTHING under a unique constraint, then a guarded debit (pg-unique).
	TxUniqueMarker TxKind = iota
	// TxRowLock: SELECT … FOR UPDATE on the account row, a plain
	// processed mark, and the debit computed from the balance read
	// (pg-for-update).
	TxRowLock
	// TxOptimistic: the account row read without a lock, its update
	// checked against the version read (TxResp.Conflict when it matches
	// no row), then a plain processed mark (pg-optimistic).
	TxOptimistic
)

// TxResp says what the transaction did.
type TxResp struct {
	// Claimed: this delivery inserted the payment's processed marker, so
	// it processed the payment (false: another delivery had).
	Claimed bool
	// Debited: the guarded debit took the amount (false with Claimed: the
	// payment was declined for funds, and still recorded as processed).
	Debited bool
	// Conflict: TxOptimistic's version check failed (another delivery
	// updated the account since this one read it); the transaction rolled
	// back, and the delivery may try again. Claimed is set too: the
	// delivery found the payment unprocessed and did its work.
	Conflict bool
}

// Transactor processes a delivery in one transaction of the store's
// database, as r.Kind says (TxKind): exclude a second delivery of the
// payment; only if this one claimed it, run inside (the app's work, and the
// hooks a fault uses to catch a delivery inside its open transaction), then
// write the debit and do the store's bookkeeping; commit. An error from
// inside rolls it all back. It is how transactional strategies (pg-unique,
// pg-for-update, pg-optimistic) run; only the Postgres store has it. A lock
// wait past TxReq.LockTimeout is ErrLockTimeout.
type Transactor interface {
	Process(ctx context.Context, r TxReq, inside func(ctx context.Context) error) (TxResp, error)
}

// Counts is the store's verdict on a run: the summary.json fields it owns
// (results.Summary has the same names).
type Counts struct {
	Processed   int64
	Duplicates  int64
	Lost        int64
	Unprocessed int64
	Overdrafts  int64
	LostUpdates int64
	Overlaps    int64
	// OverlapNs and OverlapMaxNs are the window of exposure: the total and
	// the longest time a lock key had two or more holders inside at once.
	OverlapNs    int64
	OverlapMaxNs int64
	// StaleRejected and StaleAccepted count the writes of superseded
	// holders (a holder of the same key entered after them before the
	// store took their write: judged by entry order, not by token value),
	// refused by fencing or applied. With a working lock there are none.
	StaleRejected int64
	StaleAccepted int64
	// TokenRegressed counts writes of holders not superseded whose token
	// was older than the newest the key had seen (a counter that
	// restarted): refused with fencing, applied without; not unsafe.
	TokenRegressed int64
	// TokenReused counts writes of holders not superseded whose token
	// was not older than the newest seen but not newer than the last
	// applied write's to the key: a token handed out twice.
	// Setup.Strict refuses them; otherwise they are applied (and any
	// harm shows in the other counts).
	TokenReused  int64
	Applications int64
}

// Store is the protected resource. It serves the workers (Enter, Finish)
// and judges what happened (Counts). Implementations must count every
// overlap and every stale write they see; a lenient store would make a
// strategy look safe.
type Store interface {
	Accessor
	Reset(ctx context.Context, s Setup) error
	Counts(ctx context.Context) (Counts, error)
	Close() error
}

// Accessor is the part of the store a worker uses: one Enter and one Finish
// per critical section.
type Accessor interface {
	Enter(ctx context.Context, r EnterReq) (EnterResp, error)
	Finish(ctx context.Context, r FinishReq) (FinishResp, error)
}
