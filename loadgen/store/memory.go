package store

import (
	"context"
	"errors"
	"sync/atomic"
	"time"
	"unsafe"
)

// memShards is the number of independently locked shards of the memory
// store. Sharding by account keeps every judgement exact: an operation
// touches one account (and, in payment mode, a payment of that account).
const memShards = 64

// Memory is the in-memory store. It is safe for concurrent use; each
// operation is atomic, but nothing holds across Enter and Finish: that span
// is exactly what the lock under test must protect. The lock a request
// holds is named by the mode (--lock-key): its account in AccountMode, its
// payment in PaymentMode; LockKey is for the Postgres store and for people
// reading a trace. Its layout, and when it forgets a payment, are in the
// package doc (The Memory store; Record versions and release).
type Memory struct {
	// shards first, so that each starts a cache line (see shard).
	shards [memShards]shard
	// setup and every slice below are replaced by Reset, with every
	// shard locked: any one shard's lock is enough to read them.
	setup Setup
	// epoch is the monotonic origin of the overlaps' times.
	epoch time.Time
	// epochUnixNs is epoch in Unix nanoseconds, for event times (AtNs).
	epochUnixNs int64
	// accounts[a] is guarded by the shard of account a. In AccountMode an
	// account's lock state is in the account itself (one cache line for
	// both, 64 bytes: a cycle reads and writes both); in PaymentMode it
	// is in the payment's state.
	accounts []account
	// overlapSince[a] is when account a's active count last rose to 2
	// (ns since epoch): the start of the overlap under way, if any
	// (AccountMode; PaymentMode keeps it in the payment's state). Apart
	// from the account because it is touched only when an overlap begins
	// or ends.
	overlapSince []int64
	// offered counts the payments Offer announced.
	offered atomic.Int64
	// rec, when set, receives every Enter and Finish (SetRecorder);
	// replaced with every shard locked, like setup.
	rec Recorder
}

var (
	_ Store     = (*Memory)(nil)
	_ Offerer   = (*Memory)(nil)
	_ Historian = (*Memory)(nil)
)

// SetRecorder makes m send its events to r (nil: none).
func (m *Memory) SetRecorder(r Recorder) {
	m.lockAll()
	defer m.unlockAll()
	m.rec = r
}

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
	m.epochUnixNs = m.epoch.UnixNano()
	m.offered.Store(0)
	for i := range m.shards {
		sh := &m.shards[i]
		sh.c, sh.applications = Counts{}, 0
		sh.log, sh.free, sh.seq = nil, -1, 0
		sh.payments = paymentTable{}
	}
	m.accounts = make([]account, len(s.Balances))
	// Touch what the workers will write, so that its pages are mapped
	// now rather than by page faults inside the run's critical sections.
	prefault(m.accounts)
	for a, b := range s.Balances {
		m.accounts[a].balance = b
		m.accounts[a].last = -1
	}
	m.overlapSince = nil
	if s.Mode == AccountMode {
		m.overlapSince = make([]int64, len(s.Balances))
	}
	prefault(m.overlapSince)
	return nil
}

// Offer counts payments first… as offered: Counts' Unprocessed is what
// was offered and never applied. Memory needs nothing else: it tracks a
// payment from its first Enter.
func (m *Memory) Offer(_ context.Context, first int64, accounts []int32) error {
	if err := m.checkOffer(first, accounts); err != nil {
		return err
	}
	m.offered.Add(int64(len(accounts)))
	return nil
}

func (m *Memory) checkOffer(first int64, accounts []int32) error {
	// One shard's lock is enough to read setup and accounts.
	sh := &m.shards[0]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if m.setup.PaymentAccount != nil {
		return errOfferListed
	}
	if first != m.offered.Load() {
		return errOfferOrder
	}
	for _, a := range accounts {
		if a < 0 || int(a) >= len(m.accounts) {
			return errUnknownPayment
		}
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
	if s.PaymentAccount != nil && len(s.PaymentAccount) != s.Payments || s.PaymentAccount == nil && s.Payments != 0 {
		return errors.New("store: PaymentAccount must have one entry per payment")
	}
	if s.Mode != AccountMode && s.Mode != PaymentMode {
		return errors.New("store: unknown mode")
	}
	if s.Deliveries < 0 {
		return errors.New("store: negative Deliveries")
	}
	for _, a := range s.PaymentAccount {
		if a < 0 || int(a) >= len(s.Balances) {
			return errors.New("store: PaymentAccount names an account outside Balances")
		}
	}
	return nil
}

// Tracked returns how many payments the store holds state for: those in
// flight, and those some delivery of which never finished (see Release in
// the package doc).
func (m *Memory) Tracked() int {
	m.lockAll()
	defer m.unlockAll()
	n := 0
	for i := range m.shards {
		n += m.shards[i].payments.n
	}
	return n
}

// Close does nothing.
func (m *Memory) Close() error { return nil }
