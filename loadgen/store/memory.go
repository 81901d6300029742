package store

import (
	"context"
	"errors"
	"sync"
)

// memShards is the number of independently locked shards of the memory
// store. An operation touches one account (and, in payment mode, a payment
// of that account), so sharding by account keeps every judgement exact.
const memShards = 64

// Memory is the in-memory store. It is safe for concurrent use; each
// operation is atomic, but nothing holds across Enter and Finish: that span
// is exactly what the lock under test must protect.
type Memory struct {
	mu     sync.RWMutex // guards setup against Reset
	setup  Setup
	shards [memShards]shard
	// per-payment state, guarded by the shard of the payment's account
	applications []int32
	marked       []bool
}

type shard struct {
	mu       sync.Mutex
	accounts map[int32]*account
	locks    map[string]*keyState
	c        Counts
}

type account struct {
	balance   int64
	version   int64
	overdrawn bool
	writtenBy []int64 // writtenBy[v-1] is the payment written at version v
}

type keyState struct {
	active   int
	maxToken int64
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
	for i := range m.shards {
		m.shards[i] = shard{accounts: map[int32]*account{}, locks: map[string]*keyState{}}
	}
	for a, b := range s.Balances {
		m.shard(int32(a)).accounts[int32(a)] = &account{balance: b}
	}
	m.applications = make([]int32, s.Payments)
	m.marked = make([]bool, s.Payments)
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

func (m *Memory) check(p int64, a int32) error {
	if p < 0 || p >= int64(len(m.applications)) || m.setup.PaymentAccount[p] != a {
		return errors.New("store: unknown payment or account")
	}
	return nil
}

// Enter records a holder entering the critical section of r.LockKey and
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
	ks := sh.locks[r.LockKey]
	if ks == nil {
		ks = &keyState{}
		sh.locks[r.LockKey] = ks
	}
	if ks.active > 0 {
		sh.c.Overlaps++
	}
	ks.active++
	if r.Token > ks.maxToken {
		ks.maxToken = r.Token
	}
	acc := sh.accounts[r.Account]
	return EnterResp{Processed: m.marked[r.Payment], Balance: acc.balance, Version: acc.version}, nil
}

// Finish records the holder leaving and applies its write, judging it.
func (m *Memory) Finish(_ context.Context, r FinishReq) (FinishResp, error) {
	if r.BaseVersion < 0 {
		// It would slice writtenBy out of range below.
		return FinishResp{}, errors.New("store: negative BaseVersion")
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	if err := m.check(r.Payment, r.Account); err != nil {
		return FinishResp{}, err
	}
	sh := m.shard(r.Account)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	ks := sh.locks[r.LockKey]
	if ks == nil || ks.active == 0 {
		return FinishResp{}, errors.New("store: Finish without Enter")
	}
	ks.active--
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
	acc := sh.accounts[r.Account]
	switch m.setup.Mode {
	case AccountMode:
		// The record is replaced by what the holder computed from its read:
		// writes made since BaseVersion vanish with it.
		if lostN := acc.version - r.BaseVersion; lostN > 0 {
			sh.c.LostUpdates += lostN
			for _, p := range acc.writtenBy[r.BaseVersion:acc.version] {
				m.marked[p] = false
			}
		}
		acc.balance = r.NewBalance
	case PaymentMode:
		acc.balance -= r.Debit
	}
	acc.version++
	acc.writtenBy = append(acc.writtenBy, r.Payment)
	if acc.balance < 0 && !acc.overdrawn {
		acc.overdrawn = true
		sh.c.Overdrafts++
	}
	m.applications[r.Payment]++
	m.marked[r.Payment] = true
	sh.c.Applications++
	return FinishResp{Applied: true}, nil
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
		c.StaleRejected += sh.c.StaleRejected
		c.StaleAccepted += sh.c.StaleAccepted
		c.LostUpdates += sh.c.LostUpdates
		c.Overdrafts += sh.c.Overdrafts
		c.Applications += sh.c.Applications
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
		// payment applied but no longer marked is acknowledged work lost.
		if n > 0 && !m.marked[p] {
			c.Lost++
		}
	}
	c.Unprocessed = int64(len(m.applications)) - c.Processed
	return c, nil
}

// Close does nothing.
func (m *Memory) Close() error { return nil }
