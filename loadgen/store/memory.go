package store

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
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
// Its accounts live in a slice indexed by account, so that a run over a
// million accounts costs the workers no hashing and the garbage collector
// no pointers to chase; payments live in one small hash table per shard,
// from their first Enter until nothing still in flight can refer to them
// (release, below), so that its memory grows with the accounts and the
// payments in flight, not with the payments offered. The lock a request
// holds is named by the mode (--lock-key): in AccountMode it is the
// request's account, in PaymentMode its payment; LockKey (the name the
// strategy locked) is for the Postgres store and for people reading a
// trace.
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
// Enter and Finish take one shard's mutex and nothing else; Reset and
// Counts take all of them. (A store-wide RWMutex read-locked by every call
// moved one cache line between the cores twice a call.)
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

// shard is one shard's state and its lock. A Finish writes its mutex, its
// payment table's count, its applications and, once the payment is
// judged, its processed and duplicates: all five in the first 64 bytes,
// and each shard starts a cache line, so that a lock cycle moves one line
// of the shard between the cores, not the two or three it did when a
// shard was 240 bytes wherever that put it (TestShardHotLine). A shard is
// 512 bytes: 64 of them make Memory, whose first field they are, larger
// than 32 KB, and the allocator starts an object that large on a page of
// its own; a smaller one with pointers it places 8 bytes into its slot,
// after a header.
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
	// account's version before it. Appending to one log per shard, rather
	// than to a slice per account, writes to a cache line the shard wrote
	// a moment ago, not to one of a random account's (a cache miss every
	// Finish). Entries dropped are reused, through the free list that
	// starts at free (-1: none) and runs through their prev links.
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
	// (see Memory: version 0, or the version it had when it was last left
	// with no holder inside), which has no entry (AccountMode). A log
	// has fewer than 2³¹ versions: each takes 24 bytes.
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

// superseded reports whether the holder of entry number entry of key ks
// has been superseded: the key has had a later Enter. Serial-number
// comparison (RFC 1982) of the 32-bit counter, exact while fewer than 2³¹
// Enters of the key happen during one critical section.
func (ks *keyState) superseded(entry int64) bool {
	return int32(ks.entries-uint32(entry)) > 0
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

func (m *Memory) shard(a int32) *shard { return &m.shards[uint32(a)%memShards] }

// check reports a payment the store does not know; the shard of a is held.
// Payments listed in the setup must be of their account; otherwise any
// payment of a known account is known (and a tracked payment must be of
// the account it was first entered with: the callers check ps.account).
func (m *Memory) check(p int64, a int32) error {
	if p < 0 || a < 0 || int(a) >= len(m.accounts) {
		return errUnknownPayment
	}
	if m.setup.PaymentAccount != nil && (p >= int64(len(m.setup.PaymentAccount)) || m.setup.PaymentAccount[p] != a) {
		return errUnknownPayment
	}
	return nil
}

// key is the state of the lock that guards payment ps of account a, and
// where its overlap start is kept.
func (m *Memory) key(ps *paymentState, a int32) (*keyState, *int64) {
	if m.setup.Mode == PaymentMode {
		return &ps.key, &ps.overlapSince
	}
	return &m.accounts[a].key, &m.overlapSince[a]
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
	ps := sh.payments.add(r.Payment, r.Account)
	if ps.account != r.Account {
		return EnterResp{}, errUnknownPayment
	}
	ks, since := m.key(ps, r.Account)
	if ks.active > 0 {
		sh.c.Overlaps++
	}
	// The clock is read only when an overlap begins or ends, or for the
	// history, not on every call.
	at := int64(-1)
	if ks.active == 1 || m.rec != nil {
		at = m.sinceEpoch(r.AtNs)
	}
	if ks.active == 1 {
		// A second holder: the window of exposure opens.
		*since = at
	}
	ks.active++
	ks.entries++
	if r.Token > ks.maxToken {
		ks.maxToken = r.Token
	}
	acc := &m.accounts[r.Account]
	resp := EnterResp{Processed: ps.inRecord > 0, Balance: acc.balance, Version: acc.version, Entry: int64(ks.entries)}
	if m.rec != nil {
		sh.seq++
		m.rec.Record(m.lane(r.Account), &Event{Key: r.LockKey, Instance: int32(r.Instance), Worker: r.Worker,
			Payment: r.Payment, Account: r.Account, Seq: sh.seq, Entry: resp.Entry, AtNs: m.epochUnixNs + at,
			Token: r.Token, Processed: resp.Processed, Balance: resp.Balance, Version: resp.Version})
	}
	return resp, nil
}

// lane is the Record lane of account a's events: its shard.
func (m *Memory) lane(a int32) int { return int(uint32(a) % memShards) }

// sinceEpoch is the event time atNs (Unix ns; 0 for now) as nanoseconds
// since the epoch: a sequenced store applies events after they happened,
// and times them by the holder's clock.
func (m *Memory) sinceEpoch(atNs int64) int64 {
	if atNs == 0 {
		return int64(time.Since(m.epoch))
	}
	return atNs - m.epochUnixNs
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
	ps := sh.payments.get(r.Payment)
	if ps != nil && ps.account != r.Account {
		return FinishResp{}, errUnknownPayment
	}
	if ps == nil {
		// Never entered (or released: all its Finishes were had).
		return FinishResp{}, errFinishWithoutEnter
	}
	ks, since := m.key(ps, r.Account)
	if ks.active == 0 {
		return FinishResp{}, errFinishWithoutEnter
	}
	acc := &m.accounts[r.Account]
	bi := int32(-1) // where version BaseVersion is in the log
	if r.Apply && m.setup.Mode == AccountMode {
		// Refused before anything changes, like the errors above.
		if r.BaseVersion > acc.version {
			return FinishResp{}, errBaseAhead
		}
		var ok bool
		if bi, ok = sh.down(acc.last, acc.version, r.BaseVersion); !ok {
			return FinishResp{}, errBaseReleased
		}
	}
	ks.active--
	at := int64(-1)
	if ks.active == 1 || m.rec != nil {
		at = m.sinceEpoch(r.AtNs)
	}
	if ks.active == 1 {
		// Back to one holder: the overlap is over.
		d := max(0, at-*since)
		sh.c.OverlapNs += d
		sh.c.OverlapMaxNs = max(sh.c.OverlapMaxNs, d)
	}
	ps.finishes++
	resp := m.apply(sh, acc, ks, ps, r, bi)
	if m.rec != nil {
		sh.seq++
		ev := Event{Finish: true, Key: r.LockKey, Payment: r.Payment, Account: r.Account, Seq: sh.seq,
			Entry: r.Entry, AtNs: m.epochUnixNs + at, Token: r.Token}
		if r.Apply {
			ev.Wrote, ev.Applied, ev.Refused = true, resp.Applied, resp.Refused
			ev.Base, ev.Debit, ev.NewBalance = r.BaseVersion, r.Debit, r.NewBalance
			if resp.Applied {
				ev.Made = acc.version
			}
		}
		m.rec.Record(m.lane(r.Account), &ev)
	}
	m.settle(sh, acc, ks, r.Payment)
	return resp, nil
}

// apply judges and applies the write of a holder leaving (nothing when it
// does not write); bi is where its BaseVersion is in the log.
func (m *Memory) apply(sh *shard, acc *account, ks *keyState, ps *paymentState, r FinishReq, bi int32) FinishResp {
	if !r.Apply {
		return FinishResp{}
	}
	refused, why := judgeWrite(m.setup, ks.superseded(r.Entry), r.Token, ks.maxToken, ks.lastApplied)
	switch why {
	case Stale:
		if refused {
			sh.c.StaleRejected++
		} else {
			sh.c.StaleAccepted++
		}
	case TokenRegressed:
		sh.c.TokenRegressed++
	case TokenReused:
		sh.c.TokenReused++
	}
	if refused {
		return FinishResp{StaleRejected: true, Refused: why}
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
		m.rebase(sh, acc, r.BaseVersion, bi)
		acc.balance = r.NewBalance
		acc.last = sh.push(recordVersion{parent: r.BaseVersion, payment: r.Payment, prev: acc.last, debit: debit})
		ps.logged = true
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
	ps.applications++
	ps.inRecord++
	if debit {
		acc.appliedDebits++
		acc.inRecordDebits++
	}
	sh.applications++
	return FinishResp{Applied: true, Refused: why}
}

// settle releases what nothing in flight can refer to any more, after a
// Finish of payment p (see Memory): in AccountMode, once the account has
// no holder inside, its log entries and the payments that wrote them and
// are done; and p itself once it is done. It runs last in Finish: release
// moves other payments' states in the table.
func (m *Memory) settle(sh *shard, acc *account, ks *keyState, p int64) {
	if m.setup.Mode == AccountMode && ks.active == 0 {
		for i := acc.last; i >= 0; {
			v := &sh.log[i]
			next := v.prev
			if ps := sh.payments.get(v.payment); ps != nil && ps.logged {
				ps.logged = false
				m.release(sh, ps)
			}
			v.prev, sh.free = sh.free, i
			i = next
		}
		acc.last = -1
	}
	if ps := sh.payments.get(p); ps != nil {
		m.release(sh, ps)
	}
}

// release folds payment ps into the shard's counts and forgets it, if it
// is done: every delivery judged, no holder of its lock inside, and no
// application of it in the log (a write to come could walk it).
func (m *Memory) release(sh *shard, ps *paymentState) {
	k := m.setup.Deliveries
	if k == 0 || int(ps.finishes) < k || ps.logged || ps.key.active > 0 {
		return
	}
	sh.c.fold(ps)
	sh.payments.remove(ps.id)
}

// fold adds payment ps's final counts to c.
func (c *Counts) fold(ps *paymentState) {
	n := int64(ps.applications)
	if n > 0 {
		c.Processed++
		c.Duplicates += n - 1
	}
	// Every application was acknowledged to its worker (Applied), so a
	// payment applied but no longer in its account's record is
	// acknowledged work lost.
	if n > 0 && ps.inRecord == 0 {
		c.Lost++
	}
}

// push adds v to the log, in a free entry if there is one, and returns
// where it is.
func (sh *shard) push(v recordVersion) int32 {
	if i := sh.free; i >= 0 {
		sh.free = sh.log[i].prev
		sh.log[i] = v
		return i
	}
	sh.log = append(sh.log, v)
	return int32(len(sh.log) - 1)
}

// rebase makes acc's record hold what version base holds, before a write
// computed from base lands on it; bi is where base is in the shard's log.
// Both versions' sets are their chains of parents down to the floor, so
// walking the current version and base down to their common ancestor
// (parents are smaller versions: step the larger) visits exactly the
// applications that leave the record (on the current version's side) and
// those that come back into it (on base's side: a write from a read older
// than an overwrite resurrects what it had read). When the lock works,
// base is the current version and nothing is walked.
//
// The versions are found in the shard's log by the links from each to the
// account's version before it: ci and bi are where versions cur and base
// are, and both only move down, never below the floor (every version in
// the log descends from it).
func (m *Memory) rebase(sh *shard, acc *account, base int64, bi int32) {
	cur, ci := acc.version, acc.last
	for cur != base {
		if cur > base {
			v := sh.log[ci]
			sh.payments.get(v.payment).inRecord--
			if v.debit {
				acc.inRecordDebits--
			}
			ci, _ = sh.down(ci, cur, v.parent)
			cur = v.parent
		} else {
			v := sh.log[bi]
			sh.payments.get(v.payment).inRecord++
			if v.debit {
				acc.inRecordDebits++
			}
			bi, _ = sh.down(bi, base, v.parent)
			base = v.parent
		}
	}
}

// down returns where in the log version to of an account is, given where
// its version from (≥ to) is; false when to is below the account's floor,
// whose versions the log no longer has.
func (sh *shard) down(i int32, from, to int64) (int32, bool) {
	for ; from > to; from-- {
		if i < 0 {
			return -1, false
		}
		i = sh.log[i].prev
	}
	return i, true
}

// Counts computes the verdict from the store's state: the counts of the
// payments released and of those it still tracks.
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
		c.TokenRegressed += sh.c.TokenRegressed
		c.TokenReused += sh.c.TokenReused
		c.Overdrafts += sh.c.Overdrafts
		c.Applications += sh.applications
		c.Processed += sh.c.Processed
		c.Duplicates += sh.c.Duplicates
		c.Lost += sh.c.Lost
		for a := i; a < len(m.accounts); a += memShards {
			c.LostUpdates += m.accounts[a].appliedDebits - m.accounts[a].inRecordDebits
		}
		sh.payments.each(func(ps *paymentState) { c.fold(ps) })
	}
	total := m.offered.Load()
	if m.setup.PaymentAccount != nil {
		total = int64(m.setup.Payments)
	}
	c.Unprocessed = max(0, total-c.Processed)
	return c, nil
}

// Tracked returns how many payments the store holds state for: those in
// flight, and those some delivery of which never finished (see Memory).
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
