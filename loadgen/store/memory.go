package store

import (
	"context"
	"errors"
	"sync"
	"time"
)

// memShards is the number of independently locked shards of the memory
// store. An operation touches one account (and, in payment mode, a payment
// of that account), so sharding by account keeps every judgement exact.
const memShards = 64

// Memory is the in-memory store. It is safe for concurrent use; each
// operation is atomic, but nothing holds across Enter and Finish: that span
// is exactly what the lock under test must protect.
//
// Its state lives in slices indexed by account and payment id, not maps, so
// that a run over a million accounts costs the workers no hashing and the
// garbage collector no pointers to chase. The lock a request holds is named
// by the mode (--lock-key): in AccountMode it is the request's account, in
// PaymentMode its payment; LockKey (the name the strategy locked) is for
// the Postgres store and for people reading a trace.
type Memory struct {
	mu    sync.RWMutex // guards setup against Reset
	setup Setup
	// epoch is the monotonic origin of the overlaps' times.
	epoch  time.Time
	shards [memShards]shard
	// accounts[a], and keys[k] for every lock key k of account a's
	// payments, are guarded by the shard of account a.
	accounts []account
	keys     []keyState
	// per-payment state, guarded by the shard of the payment's account
	applications []int32
	// inRecord counts the payment's applications reflected in its
	// account's current record; the payment is marked processed while it
	// is above zero.
	inRecord []int32
}

type shard struct {
	mu sync.Mutex
	c  Counts
	// keep neighbouring shards' mutexes off one cache line
	_ [64]byte
}

type account struct {
	balance   int64
	version   int64
	overdrawn bool
	// versions[v-1] is the write that made version v (account mode only:
	// in payment mode every write's parent is the version before it).
	versions []recordVersion
	// appliedDebits counts the applications with a debit the store
	// applied to this account; inRecordDebits those reflected in its
	// current record. The difference is the account's lost updates.
	appliedDebits  int64
	inRecordDebits int64
}

// recordVersion is one version of an account record: the version it was
// computed from, and the application written with it.
type recordVersion struct {
	parent  int64
	payment int64
	debit   bool
}

type keyState struct {
	active   int32
	maxToken int64
	// overlapSince is when active last rose to 2 (ns since the store's
	// epoch): the start of the overlap under way, if any.
	overlapSince int64
}

var _ Store = (*Memory)(nil)

// NewMemory returns an empty store; call Reset before use.
func NewMemory() *Memory { return &Memory{} }

// Reset starts a new bank.
func (m *Memory) Reset(_ context.Context, s Setup) error {
	if err := validateSetup(s); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.setup = s
	m.epoch = time.Now()
	for i := range m.shards {
		m.shards[i].c = Counts{}
	}
	m.accounts = make([]account, len(s.Balances))
	for a, b := range s.Balances {
		m.accounts[a].balance = b
	}
	if s.Mode == PaymentMode {
		m.keys = make([]keyState, s.Payments)
	} else {
		m.keys = make([]keyState, len(s.Balances))
	}
	m.applications = make([]int32, s.Payments)
	m.inRecord = make([]int32, s.Payments)
	return nil
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

// key is the state of the lock that guards payment p of account a.
func (m *Memory) key(p int64, a int32) *keyState {
	if m.setup.Mode == PaymentMode {
		return &m.keys[p]
	}
	return &m.keys[a]
}

func (m *Memory) check(p int64, a int32) error {
	if p < 0 || p >= int64(len(m.applications)) || m.setup.PaymentAccount[p] != a {
		return errUnknownPayment
	}
	return nil
}

// Enter records a holder entering the critical section of its lock and
// returns what it reads.
func (m *Memory) Enter(_ context.Context, r EnterReq) (EnterResp, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if err := m.check(r.Payment, r.Account); err != nil {
		return EnterResp{}, err
	}
	sh := m.shard(r.Account)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	ks := m.key(r.Payment, r.Account)
	if ks.active > 0 {
		sh.c.Overlaps++
	}
	if ks.active == 1 {
		// A second holder: the window of exposure opens (the clock is read
		// only when an overlap begins or ends, not on every call).
		ks.overlapSince = int64(time.Since(m.epoch))
	}
	ks.active++
	if r.Token > ks.maxToken {
		ks.maxToken = r.Token
	}
	acc := &m.accounts[r.Account]
	return EnterResp{Processed: m.inRecord[r.Payment] > 0, Balance: acc.balance, Version: acc.version}, nil
}

// Finish records the holder leaving and applies its write, judging it.
func (m *Memory) Finish(_ context.Context, r FinishReq) (FinishResp, error) {
	if r.BaseVersion < 0 {
		// A version the record never had: there is nothing to walk to.
		return FinishResp{}, errNegativeBase
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	if err := m.check(r.Payment, r.Account); err != nil {
		return FinishResp{}, err
	}
	sh := m.shard(r.Account)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	ks := m.key(r.Payment, r.Account)
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
		d := int64(time.Since(m.epoch)) - ks.overlapSince
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
	}
	if r.Token > ks.maxToken {
		ks.maxToken = r.Token
	}
	debit := r.Debit > 0
	switch m.setup.Mode {
	case AccountMode:
		// The record is replaced by what the holder computed from its read
		// of version BaseVersion: the new version's parent.
		m.rebase(acc, r.BaseVersion)
		acc.balance = r.NewBalance
		acc.versions = append(acc.versions, recordVersion{parent: r.BaseVersion, payment: r.Payment, debit: debit})
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
	m.applications[r.Payment]++
	m.inRecord[r.Payment]++
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
func (m *Memory) rebase(acc *account, base int64) {
	for cur := acc.version; cur != base; {
		if cur > base {
			v := acc.versions[cur-1]
			m.inRecord[v.payment]--
			if v.debit {
				acc.inRecordDebits--
			}
			cur = v.parent
		} else {
			v := acc.versions[base-1]
			m.inRecord[v.payment]++
			if v.debit {
				acc.inRecordDebits++
			}
			base = v.parent
		}
	}
}

// Counts computes the verdict from the store's state.
func (m *Memory) Counts(context.Context) (Counts, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var c Counts
	for i := range m.shards {
		sh := &m.shards[i]
		sh.mu.Lock()
		c.Overlaps += sh.c.Overlaps
		c.OverlapNs += sh.c.OverlapNs
		c.OverlapMaxNs = max(c.OverlapMaxNs, sh.c.OverlapMaxNs)
		c.StaleRejected += sh.c.StaleRejected
		c.StaleAccepted += sh.c.StaleAccepted
		c.Overdrafts += sh.c.Overdrafts
		c.Applications += sh.c.Applications
		for a := i; a < len(m.accounts); a += memShards {
			c.LostUpdates += m.accounts[a].appliedDebits - m.accounts[a].inRecordDebits
		}
		sh.mu.Unlock()
	}
	for p, n := range m.applications {
		if n > 0 {
			c.Processed++
		}
		if n > 1 {
			c.Duplicates += int64(n - 1)
		}
		// Every application was acknowledged to its worker (Applied), so a
		// payment applied but no longer in its account's record is
		// acknowledged work lost.
		if n > 0 && m.inRecord[p] == 0 {
			c.Lost++
		}
	}
	c.Unprocessed = int64(len(m.applications)) - c.Processed
	return c, nil
}

// Close does nothing.
func (m *Memory) Close() error { return nil }
