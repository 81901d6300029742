package store

import (
	"context"
	"time"
)

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
