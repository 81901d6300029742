package store

import (
	"context"
	"errors"
	"sync"
	"time"
	"unsafe"
)

// memShards is the number of independently locked shards of the memory
// store. An operation touches one account (and, in payment mode, a payment
// of that account), so sharding by account keeps every judgement exact.
const memShards = 64

// Memory is the in-memory store. It is safe for concurrent use; each
// operation is atomic, but nothing holds across Enter and Finish: that span
// is exactly what the lock under test must protect.
//
// Its state lives in slices indexed by account and payment, not maps, so
// that a run over a million accounts costs the workers no hashing and the
// garbage collector no pointers to chase. The lock a request holds is named
// by the mode (--lock-key): in AccountMode it is the request's account, in
// PaymentMode its payment; LockKey (the name the strategy locked) is for
// the Postgres store and for people reading a trace.
//
// Enter and Finish take one shard's mutex and nothing else; Reset and
// Counts take all of them. (A store-wide RWMutex read-locked by every call
// moved one cache line between the cores twice a call.)
type Memory struct {
	// setup and every slice below are replaced by Reset, with every
	// shard locked: any one shard's lock is enough to read them.
	setup Setup
	// epoch is the monotonic origin of the overlaps' times.
	epoch  time.Time
	shards [memShards]shard
	// accounts[a], and the lock state of every lock key of account a's
	// payments, are guarded by the shard of account a. In AccountMode an
	// account's lock state is in the account itself (one cache line for
	// both, 64 bytes: a cycle reads and writes both); in PaymentMode it
	// is keys[p], for payment p.
	accounts []account
	keys     []keyState
	// overlapSince[k] is when lock key k's active count last rose to 2
	// (ns since epoch): the start of the overlap under way, if any. k is
	// the account in AccountMode and the payment in PaymentMode. Apart
	// from the lock state because it is touched only when an overlap
	// begins or ends.
	overlapSince []int64
	// payments[p] is payment p's state, guarded by the shard of its
	// account.
	payments []paymentState
}

// paymentState is one payment's state: side by side, so that a Finish
// touches one cache line for it, not one in each of two slices.
type paymentState struct {
	applications int32
	// inRecord counts the payment's applications reflected in its
	// account's current record; the payment is marked processed while it
	// is above zero.
	inRecord int32
}

type shard struct {
	mu sync.Mutex
	c  Counts
	// log holds the versions of the shard's accounts (AccountMode), in
	// the order they were written, each linked to its account's version
	// before it. Appending to one log per shard, rather than to a slice
	// per account, writes to a cache line the shard wrote a moment ago,
	// not to one of a random account's (a cache miss every Finish). Reset
	// gives it room for one version per payment of the shard's accounts;
	// only duplicate writes grow it.
	log []recordVersion
	// keep neighbouring shards' mutexes off one cache line
	_ [64]byte
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
	// shard's log, -1 for version 0 (AccountMode). A log has fewer than
	// 2³¹ versions: each takes 24 bytes.
	last      int32
	overdrawn bool
}

// recordVersion is one version of an account record: the version it was
// computed from, the application written with it, and where the account's
// version before it is in the shard's log (-1 for version 0).
type recordVersion struct {
	parent  int64
	payment int64
	prev    int32
	debit   bool
}

type keyState struct {
	active   int32
	maxToken int64
	// lastApplied is the token of the last applied write (Setup.Strict).
	lastApplied int64
}

var _ Store = (*Memory)(nil)

// NewMemory returns an empty store; call Reset before use.
func NewMemory() *Memory { return &Memory{} }

// Reset starts a new bank.
func (m *Memory) Reset(_ context.Context, s Setup) error {
	if err := validateSetup(s); err != nil {
		return err
	}
	m.lockAll()
	defer m.unlockAll()
	m.setup = s
	m.epoch = time.Now()
	for i := range m.shards {
		m.shards[i].c = Counts{}
	}
	m.accounts = make([]account, len(s.Balances))
	for a, b := range s.Balances {
		m.accounts[a].balance = b
		m.accounts[a].last = -1
	}
	var perShard [memShards]int
	for _, a := range s.PaymentAccount {
		perShard[uint32(a)%memShards]++
	}
	for i := range m.shards {
		m.shards[i].log = nil
		if s.Mode == AccountMode {
			m.shards[i].log = make([]recordVersion, 0, perShard[i])
		}
	}
	m.keys = nil
	if s.Mode == PaymentMode {
		m.keys = make([]keyState, s.Payments)
		m.overlapSince = make([]int64, s.Payments)
	} else {
		m.overlapSince = make([]int64, len(s.Balances))
	}
	m.payments = make([]paymentState, s.Payments)
	// Touch what the workers will write, so that its pages are mapped
	// now rather than by page faults inside the run's critical sections.
	prefault(m.payments)
	prefault(m.keys)
	for i := range m.shards {
		prefault(m.shards[i].log[:cap(m.shards[i].log)])
	}
	return nil
}

// prefault writes the zero value to one element of every page of s (a
// slice fresh from the allocator, which large ones get straight from the
// kernel without touching them).
func prefault[T any](s []T) {
	var zero T
	step := 1
	if size := int(unsafe.Sizeof(zero)); size > 0 && size < pageSize {
		step = pageSize / size
	}
	for i := 0; i < len(s); i += step {
		s[i] = zero
	}
}

// pageSize is the smallest page size prefault assumes: 4 KB.
const pageSize = 4096

// lockAll locks every shard, in order; unlockAll unlocks them.
func (m *Memory) lockAll() {
	for i := range m.shards {
		m.shards[i].mu.Lock()
	}
}

func (m *Memory) unlockAll() {
	for i := range m.shards {
		m.shards[i].mu.Unlock()
	}
}

// validateSetup rejects a setup the stores could not judge. A payment of
// an account outside Balances would otherwise reach a missing account.
func validateSetup(s Setup) error {
	if len(s.PaymentAccount) != s.Payments {
		return errors.New("store: PaymentAccount must have one entry per payment")
	}
	if s.Mode != AccountMode && s.Mode != PaymentMode {
		return errors.New("store: unknown mode")
	}
	for _, a := range s.PaymentAccount {
		if a < 0 || int(a) >= len(s.Balances) {
			return errors.New("store: PaymentAccount names an account outside Balances")
		}
	}
	return nil
}

func (m *Memory) shard(a int32) *shard { return &m.shards[uint32(a)%memShards] }

// key is the state of the lock that guards payment p of account a, and
// its index in overlapSince.
func (m *Memory) key(p int64, a int32) (*keyState, int64) {
	if m.setup.Mode == PaymentMode {
		return &m.keys[p], p
	}
	return &m.accounts[a].key, int64(a)
}

// payment is payment p's state.
func (m *Memory) payment(p int64) *paymentState { return &m.payments[p] }

// check reports a payment the store does not know; the shard of a is held.
func (m *Memory) check(p int64, a int32) error {
	if p < 0 || p >= int64(len(m.payments)) || m.setup.PaymentAccount[p] != a {
		return errUnknownPayment
	}
	return nil
}

// Enter records a holder entering the critical section of its lock and
// returns what it reads.
func (m *Memory) Enter(_ context.Context, r EnterReq) (EnterResp, error) {
	sh := m.shard(r.Account)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if err := m.check(r.Payment, r.Account); err != nil {
		return EnterResp{}, err
	}
	ks, k := m.key(r.Payment, r.Account)
	if ks.active > 0 {
		sh.c.Overlaps++
	}
	if ks.active == 1 {
		// A second holder: the window of exposure opens (the clock is read
		// only when an overlap begins or ends, not on every call).
		m.overlapSince[k] = int64(time.Since(m.epoch))
	}
	ks.active++
	if r.Token > ks.maxToken {
		ks.maxToken = r.Token
	}
	acc := &m.accounts[r.Account]
	return EnterResp{Processed: m.payment(r.Payment).inRecord > 0, Balance: acc.balance, Version: acc.version}, nil
}

// Finish records the holder leaving and applies its write, judging it.
func (m *Memory) Finish(_ context.Context, r FinishReq) (FinishResp, error) {
	if r.BaseVersion < 0 {
		// A version the record never had: there is nothing to walk to.
		return FinishResp{}, errNegativeBase
	}
	sh := m.shard(r.Account)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if err := m.check(r.Payment, r.Account); err != nil {
		return FinishResp{}, err
	}
	ks, k := m.key(r.Payment, r.Account)
	if ks.active == 0 {
		return FinishResp{}, errFinishWithoutEnter
	}
	acc := &m.accounts[r.Account]
	if r.Apply && m.setup.Mode == AccountMode && r.BaseVersion > acc.version {
		// Refused before anything changes, like the errors above.
		return FinishResp{}, errBaseAhead
	}
	ks.active--
	if ks.active == 1 {
		// Back to one holder: the overlap is over.
		d := int64(time.Since(m.epoch)) - m.overlapSince[k]
		sh.c.OverlapNs += d
		sh.c.OverlapMaxNs = max(sh.c.OverlapMaxNs, d)
	}
	if !r.Apply {
		return FinishResp{}, nil
	}
	if r.Token > 0 && r.Token < ks.maxToken {
		if m.setup.Fencing {
			sh.c.StaleRejected++
			return FinishResp{StaleRejected: true}, nil
		}
		sh.c.StaleAccepted++
	} else if r.Token > 0 && r.Token <= ks.lastApplied {
		sh.c.TokenReused++
		if m.setup.Fencing && m.setup.Strict {
			return FinishResp{StaleRejected: true}, nil
		}
	}
	if r.Token > ks.maxToken {
		ks.maxToken = r.Token
	}
	ks.lastApplied = max(ks.lastApplied, r.Token)
	debit := r.Debit > 0
	switch m.setup.Mode {
	case AccountMode:
		// The record is replaced by what the holder computed from its read
		// of version BaseVersion: the new version's parent.
		m.rebase(sh, acc, r.BaseVersion)
		acc.balance = r.NewBalance
		sh.log = append(sh.log, recordVersion{parent: r.BaseVersion, payment: r.Payment, prev: acc.last, debit: debit})
		acc.last = int32(len(sh.log) - 1)
	case PaymentMode:
		// An atomic debit: computed from the current version, so the
		// record keeps everything it held.
		acc.balance -= r.Debit
	}
	acc.version++
	if acc.balance < 0 && !acc.overdrawn {
		acc.overdrawn = true
		sh.c.Overdrafts++
	}
	ps := m.payment(r.Payment)
	ps.applications++
	ps.inRecord++
	if debit {
		acc.appliedDebits++
		acc.inRecordDebits++
	}
	sh.c.Applications++
	return FinishResp{Applied: true}, nil
}

// rebase makes acc's record hold what version base holds, before a write
// computed from base lands on it. Both versions' sets are their chains of
// parents down to version 0, so walking the current version and base down
// to their common ancestor (parents are smaller versions: step the larger)
// visits exactly the applications that leave the record (on the current
// version's side) and those that come back into it (on base's side: a
// write from a read older than an overwrite resurrects what it had read).
// When the lock works, base is the current version and nothing is walked.
//
// The versions are found in the shard's log by the links from each to the
// account's version before it: ci and bi are where versions cur and base
// are, and both only move down.
func (m *Memory) rebase(sh *shard, acc *account, base int64) {
	cur, ci := acc.version, acc.last
	bi := sh.down(ci, cur, base)
	for cur != base {
		if cur > base {
			v := sh.log[ci]
			m.payment(v.payment).inRecord--
			if v.debit {
				acc.inRecordDebits--
			}
			ci, cur = sh.down(ci, cur, v.parent), v.parent
		} else {
			v := sh.log[bi]
			m.payment(v.payment).inRecord++
			if v.debit {
				acc.inRecordDebits++
			}
			bi, base = sh.down(bi, base, v.parent), v.parent
		}
	}
}

// down returns where in the log version to of an account is, given where
// its version from (≥ to) is.
func (sh *shard) down(i int32, from, to int64) int32 {
	for ; from > to; from-- {
		i = sh.log[i].prev
	}
	return i
}

// Counts computes the verdict from the store's state.
func (m *Memory) Counts(context.Context) (Counts, error) {
	m.lockAll()
	defer m.unlockAll()
	var c Counts
	for i := range m.shards {
		sh := &m.shards[i]
		c.Overlaps += sh.c.Overlaps
		c.OverlapNs += sh.c.OverlapNs
		c.OverlapMaxNs = max(c.OverlapMaxNs, sh.c.OverlapMaxNs)
		c.StaleRejected += sh.c.StaleRejected
		c.StaleAccepted += sh.c.StaleAccepted
		c.TokenReused += sh.c.TokenReused
		c.Overdrafts += sh.c.Overdrafts
		c.Applications += sh.c.Applications
		for a := i; a < len(m.accounts); a += memShards {
			c.LostUpdates += m.accounts[a].appliedDebits - m.accounts[a].inRecordDebits
		}
	}
	for _, ps := range m.payments {
		n := ps.applications
		if n > 0 {
			c.Processed++
		}
		if n > 1 {
			c.Duplicates += int64(n - 1)
		}
		// Every application was acknowledged to its worker (Applied), so a
		// payment applied but no longer in its account's record is
		// acknowledged work lost.
		if n > 0 && ps.inRecord == 0 {
			c.Lost++
		}
	}
	c.Unprocessed = int64(len(m.payments)) - c.Processed
	return c, nil
}

// Close does nothing.
func (m *Memory) Close() error { return nil }
