package store

import (
	"sync"
	"unsafe"
)

// paymentState is one payment's state while the store tracks it.
type paymentState struct {
	id      int64
	account int32
	// applications counts the payment's applied writes; inRecord those
	// reflected in its account's current record: the payment is marked
	// processed while it is above zero.
	applications int32
	inRecord     int32
	// finishes counts the Finishes of its holders: at Setup.Deliveries,
	// every delivery has been judged.
	finishes int32
	// logged is set while one of its applications is in the shard's log
	// (AccountMode): a write to come may still walk it.
	logged bool
	// used is set while the state is a payment's: a paymentTable slot in
	// use (in padding the struct has anyway).
	used bool
	// key and overlapSince are its lock's state (PaymentMode).
	key          keyState
	overlapSince int64
}

// shard is one shard's state and its lock, padded to 512 bytes so that
// each shard starts a cache line and the fields a Finish writes share one
// line (TestShardHotLine; see The Memory store in the package doc).
type shard struct {
	shardState
	_ [512 - unsafe.Sizeof(shardState{})]byte
}

type shardState struct {
	mu sync.Mutex
	// payments are the payments of the shard's accounts that the store
	// tracks: next to mu, on the cache line Enter takes the lock on (it
	// touches nothing else of the shard unless locks overlap).
	payments paymentTable
	// applications counts the writes applied (Counts.Applications), here
	// rather than in c for the line above.
	applications int64
	// c holds the overlaps, stale writes and overdrafts counted so far,
	// and the processed, duplicates and lost of the payments released.
	c Counts
	// log holds the versions of the shard's accounts (AccountMode) written
	// since each account last had no holder inside, each linked to its
	// account's version before it; one log per shard keeps appends on a
	// warm cache line. Entries dropped are reused, through the free list
	// that starts at free (-1: none) and runs through their prev links.
	log  []recordVersion
	free int32
	// seq numbers the shard's events for the history (Event.Seq): a lock
	// key's events are all in one shard.
	seq int64
}

// account is one account record and, in AccountMode, its lock's state: 64
// bytes, one cache line.
type account struct {
	balance int64
	version int64
	// appliedDebits counts the applications with a debit the store
	// applied to this account; inRecordDebits those reflected in its
	// current record. The difference is the account's lost updates.
	appliedDebits  int64
	inRecordDebits int64
	key            keyState // AccountMode's lock state
	// last is where the write that made the current version is in the
	// shard's log, -1 when the current version is the account's floor
	// (version 0, or the version it had when it was last left with no
	// holder inside; see Release in the package doc), which has no entry
	// (AccountMode). A log has fewer than 2³¹ versions: each takes 24 bytes.
	last      int32
	overdrawn bool
}

// recordVersion is one version of an account record: the version it was
// computed from, the application written with it, and where the account's
// version before it is in the shard's log (-1 for the floor).
type recordVersion struct {
	parent  int64
	payment int64
	prev    int32
	debit   bool
}

type keyState struct {
	active int32
	// entries is the key's last entry number (EnterResp.Entry), 32 bits
	// to keep an account and its lock state on one cache line: entry
	// numbers are compared as serial numbers (superseded).
	entries  uint32
	maxToken int64
	// lastApplied is the token of the last applied write (Setup.Strict).
	lastApplied int64
}

// superseded reports whether the holder of entry number entry of key ks
// has been superseded: the key has had a later Enter. Serial-number
// comparison (RFC 1982) of the 32-bit counter, exact while fewer than 2³¹
// Enters of the key happen during one critical section.
func (ks *keyState) superseded(entry int64) bool {
	return int32(ks.entries-uint32(entry)) > 0
}
