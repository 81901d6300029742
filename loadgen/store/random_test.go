package store

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// refStore is the brute-force judge the randomized test holds the stores
// to. It keeps every version of every account record with its parent and
// recomputes each record's set of payment applications from scratch, by
// the definition — set(0) is empty, set(k) = set(parent(k)) ∪ {k} — rather
// than by walking chains as the stores do, so it cannot share their bug.
// It is slow (quadratic) and single-threaded, which is fine for a test.
type refStore struct {
	setup        Setup
	balances     []int64
	overdrawn    []bool
	versions     [][]refVersion // versions[a][k-1] made version k of account a
	applications []int
	keys         map[string]*refKey
	c            Counts // overlaps and stale writes; the rest is recomputed
}

type refVersion struct {
	parent  int64
	payment int64
	debit   int64
}

type refKey struct {
	active      int
	entries     int64 // the Enters so far: the last entry number
	maxToken    int64
	lastApplied int64 // the token of the last applied write
}

func newRefStore(s Setup) *refStore {
	r := &refStore{
		setup:        s,
		balances:     append([]int64(nil), s.Balances...),
		overdrawn:    make([]bool, len(s.Balances)),
		versions:     make([][]refVersion, len(s.Balances)),
		applications: make([]int, s.Payments),
		keys:         map[string]*refKey{},
	}
	return r
}

// record returns the applications (as versions 1..) in account a's current
// record, built from the parents of every version up to the latest.
func (r *refStore) record(a int32) map[int64]bool {
	vs := r.versions[a]
	sets := make([]map[int64]bool, len(vs)+1)
	sets[0] = map[int64]bool{}
	for k := 1; k <= len(vs); k++ {
		s := map[int64]bool{int64(k): true}
		for v := range sets[vs[k-1].parent] {
			s[v] = true
		}
		sets[k] = s
	}
	return sets[len(vs)]
}

// marked reports whether payment p has an application in its account's
// current record.
func (r *refStore) marked(p int64) bool {
	a := r.setup.PaymentAccount[p]
	for v := range r.record(a) {
		if r.versions[a][v-1].payment == p {
			return true
		}
	}
	return false
}

func (r *refStore) known(p int64, a int32) bool {
	return p >= 0 && p < int64(r.setup.Payments) && r.setup.PaymentAccount[p] == a
}

func (r *refStore) Enter(q EnterReq) (EnterResp, error) {
	if !r.known(q.Payment, q.Account) {
		return EnterResp{}, errUnknownPayment
	}
	k := r.keys[q.LockKey]
	if k == nil {
		k = &refKey{}
		r.keys[q.LockKey] = k
	}
	if k.active > 0 {
		r.c.Overlaps++
	}
	k.active++
	k.entries++
	k.maxToken = max(k.maxToken, q.Token)
	return EnterResp{Processed: r.marked(q.Payment), Balance: r.balances[q.Account],
		Version: int64(len(r.versions[q.Account])), Entry: k.entries}, nil
}

func (r *refStore) Finish(q FinishReq) (FinishResp, error) {
	if q.BaseVersion < 0 {
		return FinishResp{}, errNegativeBase
	}
	if !r.known(q.Payment, q.Account) {
		return FinishResp{}, errUnknownPayment
	}
	k := r.keys[q.LockKey]
	if k == nil || k.active == 0 {
		return FinishResp{}, errFinishWithoutEnter
	}
	current := int64(len(r.versions[q.Account]))
	if q.Apply && r.setup.Mode == AccountMode && q.BaseVersion > current {
		return FinishResp{}, errBaseAhead
	}
	k.active--
	if !q.Apply {
		return FinishResp{}, nil
	}
	// Superseded: a holder of the key entered after this one did. Then
	// the write is stale whatever its token; otherwise a token older than
	// the newest seen has regressed, and one no newer than the last
	// applied write's was handed out twice. Fencing refuses by the token
	// alone.
	var why Refusal
	switch {
	case k.entries > q.Entry:
		why = Stale
	case q.Token > 0 && q.Token < k.maxToken:
		why = TokenRegressed
	case q.Token > 0 && q.Token <= k.lastApplied:
		why = TokenReused
	}
	fenced := r.setup.Fencing && q.Token > 0 &&
		(q.Token < k.maxToken || r.setup.Strict && q.Token <= k.lastApplied)
	switch {
	case why == Stale && fenced:
		r.c.StaleRejected++
	case why == Stale:
		r.c.StaleAccepted++
	case why == TokenRegressed:
		r.c.TokenRegressed++
	case why == TokenReused:
		r.c.TokenReused++
	}
	if fenced {
		return FinishResp{StaleRejected: true, Refused: why}, nil
	}
	k.maxToken = max(k.maxToken, q.Token)
	k.lastApplied = max(k.lastApplied, q.Token)
	v := refVersion{parent: q.BaseVersion, payment: q.Payment, debit: q.Debit}
	if r.setup.Mode == AccountMode {
		r.balances[q.Account] = q.NewBalance
	} else {
		v.parent = current
		r.balances[q.Account] -= q.Debit
	}
	r.versions[q.Account] = append(r.versions[q.Account], v)
	if r.balances[q.Account] < 0 {
		r.overdrawn[q.Account] = true
	}
	r.applications[q.Payment]++
	return FinishResp{Applied: true, Refused: why}, nil
}

// Counts is the verdict by the definitions of results.Summary's fields and
// the model.
func (r *refStore) Counts() Counts {
	c := Counts{Overlaps: r.c.Overlaps, StaleRejected: r.c.StaleRejected, StaleAccepted: r.c.StaleAccepted,
		TokenRegressed: r.c.TokenRegressed, TokenReused: r.c.TokenReused}
	marked := map[int64]bool{}
	for a, vs := range r.versions {
		if r.overdrawn[a] {
			c.Overdrafts++
		}
		for _, v := range vs {
			if v.debit > 0 {
				c.LostUpdates++ // applied ...
			}
		}
		for k := range r.record(int32(a)) {
			v := vs[k-1]
			marked[v.payment] = true
			if v.debit > 0 {
				c.LostUpdates-- // ... minus still in the record
			}
		}
	}
	for p, n := range r.applications {
		c.Applications += int64(n)
		if n > 0 {
			c.Processed++
			c.Duplicates += int64(n - 1)
			if !marked[int64(p)] {
				c.Lost++
			}
		} else {
			c.Unprocessed++
		}
	}
	return c
}

// holder is a holder the randomized test has let in and not yet out.
type holder struct {
	enter  EnterReq
	read   EnterResp
	amount int64
}

// randomTrial is one random single-goroutine interleaving of Enter and
// Finish calls, generated from seed: a bank, then holders entering and
// finishing in random order, mostly as workers do (apply when the read
// says unprocessed, debit when the read balance allows, write from the
// version read), sometimes not. The generator decides from the reference's
// answers; every store must give the same ones.
type randomTrial struct {
	seed  uint64
	setup Setup
	ref   *refStore
	rng   *rand.Rand
	log   []string // the calls so far, for a failure report
	// enters counts each payment's holders let in; with Setup.Deliveries
	// set, no payment gets more, as no payment of a run gets more
	// critical sections than deliveries.
	enters []int
}

func newRandomTrial(seed uint64) *randomTrial {
	rng := rand.New(rand.NewPCG(seed, 0x10c4be7c))
	mode := AccountMode
	if rng.IntN(4) == 0 {
		mode = PaymentMode
	}
	accounts, payments := 1+rng.IntN(3), 2+rng.IntN(8)
	s := Setup{Mode: mode, Fencing: rng.IntN(3) == 0, Balances: make([]int64, accounts),
		Payments: payments, PaymentAccount: make([]int32, payments)}
	for a := range s.Balances {
		s.Balances[a] = int64(rng.IntN(80))
	}
	for p := range s.PaymentAccount {
		s.PaymentAccount[p] = int32(rng.IntN(accounts))
	}
	// Three trials in four bound the critical sections per payment (1, 2
	// or 3), so that Memory releases payments as it goes, and must still
	// agree with the reference; the fourth bounds nothing.
	s.Deliveries = int(seed % 4)
	return &randomTrial{seed: seed, setup: s, ref: newRefStore(s), rng: rng, enters: make([]int, payments)}
}

// tracked is how many payments Memory may still hold once every holder
// has left: with Setup.Deliveries, those entered fewer times; without,
// every payment entered.
func (tr *randomTrial) tracked() int {
	n := 0
	for _, e := range tr.enters {
		if e > 0 && (tr.setup.Deliveries == 0 || e < tr.setup.Deliveries) {
			n++
		}
	}
	return n
}

// enterable picks a payment that may still be entered, or reports none.
func (tr *randomTrial) enterable() (int64, bool) {
	if tr.setup.Deliveries == 0 {
		return int64(tr.rng.IntN(tr.setup.Payments)), true
	}
	var open []int64
	for p, e := range tr.enters {
		if e < tr.setup.Deliveries {
			open = append(open, int64(p))
		}
	}
	if len(open) == 0 {
		return 0, false
	}
	return open[tr.rng.IntN(len(open))], true
}

// call is one step: an Enter or a Finish, and for a Finish the holder it
// closes (its index in the pending list).
type call struct {
	enter  *EnterReq
	finish *FinishReq
	holder int
}

// next generates the next call, or reports that the trial is over.
func (tr *randomTrial) next(pending []holder, step, steps int) (call, bool) {
	rng := tr.rng
	p, canEnter := tr.enterable()
	if (step >= steps || !canEnter) && len(pending) == 0 {
		return call{}, false
	}
	if step < steps && canEnter && (len(pending) == 0 || (len(pending) < 6 && rng.IntN(2) == 0)) {
		a := tr.setup.PaymentAccount[p]
		key := fmt.Sprintf("a%d", a)
		if tr.setup.Mode == PaymentMode {
			key = fmt.Sprintf("p%d", p)
		}
		var token int64
		if tr.seed%2 == 0 {
			token = int64(rng.IntN(5))
		}
		return call{enter: &EnterReq{LockKey: key, Token: token, Payment: p, Account: a}}, true
	}
	i := rng.IntN(len(pending))
	h := pending[i]
	q := FinishReq{LockKey: h.enter.LockKey, Token: h.enter.Token, Payment: h.enter.Payment,
		Account: h.enter.Account, Apply: !h.read.Processed, BaseVersion: h.read.Version, Entry: h.read.Entry}
	if rng.IntN(10) == 0 {
		q.Apply = !q.Apply // a careless worker
	}
	if q.Apply {
		q.NewBalance = h.read.Balance
		if h.read.Balance >= h.amount {
			q.Debit, q.NewBalance = h.amount, h.read.Balance-h.amount
		}
	}
	if rng.IntN(25) == 0 {
		// A version no holder read: refused, and the holder stays in.
		q.BaseVersion = int64(len(tr.ref.versions[q.Account])) + 1
	}
	return call{finish: &q, holder: i}, true
}

// TestStoreRandomInterleavings drives every store and the brute-force
// reference with the same random interleavings and requires the same
// answer to every call and the same verdict: Memory, Memory over RPC and
// Postgres must agree with each other and with the definition.
func TestStoreRandomInterleavings(t *testing.T) {
	trials, steps := 300, 60
	if testing.Short() {
		trials = 40
	}
	all := stores(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*testTimeout)
	defer cancel()
	for seed := uint64(1); seed <= uint64(trials); seed++ {
		tr := newRandomTrial(seed)
		for _, s := range all {
			if err := s.s.Reset(ctx, tr.setup); err != nil {
				t.Fatalf("%s: Reset: %v", s.name, err)
			}
		}
		if !tr.run(ctx, t, all, steps) {
			continue
		}
		want := tr.ref.Counts()
		for _, s := range all {
			got, err := s.s.Counts(ctx)
			if err != nil {
				t.Fatalf("%s: Counts: %v", s.name, err)
			}
			got.OverlapNs, got.OverlapMaxNs = 0, 0 // times: the model has none
			if got != want {
				t.Errorf("seed %d: %s: Counts: got %+v; want %+v\nsetup %+v\n%s",
					seed, s.name, got, want, tr.setup, strings.Join(tr.log, "\n"))
			}
			// Memory forgets every payment all of whose critical
			// sections are over, and only those.
			if m, ok := s.s.(interface{ Tracked() int }); ok {
				if got, want := m.Tracked(), tr.tracked(); got != want {
					t.Errorf("seed %d: %s: Tracked() = %d; want %d (setup %+v, enters %v)", seed, s.name, got, want, tr.setup, tr.enters)
				}
			}
		}
	}
}

// run plays the trial on every store, checking each answer against the
// reference's; it reports false (after an error) when they disagree.
func (tr *randomTrial) run(ctx context.Context, t *testing.T, all []namedStore, steps int) bool {
	t.Helper()
	var pending []holder
	for step := 0; ; step++ {
		c, ok := tr.next(pending, step, steps)
		if !ok {
			return true
		}
		var want, got, who string
		if c.enter != nil {
			tr.log = append(tr.log, fmt.Sprintf("Enter(%+v)", *c.enter))
			read, err := tr.ref.Enter(*c.enter)
			want = answer(read, err)
			for _, s := range all {
				r, err := s.s.Enter(ctx, *c.enter)
				if got, who = answer(r, err), s.name; got != want {
					break
				}
			}
			if err == nil {
				tr.enters[c.enter.Payment]++
				amount := 1 + int64(tr.rng.IntN(30))
				pending = append(pending, holder{enter: *c.enter, read: read, amount: amount})
			}
		} else {
			tr.log = append(tr.log, fmt.Sprintf("Finish(%+v)", *c.finish))
			res, err := tr.ref.Finish(*c.finish)
			want = answer(res, err)
			for _, s := range all {
				r, err := s.s.Finish(ctx, *c.finish)
				if got, who = answer(r, err), s.name; got != want {
					break
				}
			}
			if err == nil {
				pending = append(pending[:c.holder], pending[c.holder+1:]...)
			}
		}
		if got != want {
			t.Errorf("seed %d call %d: %s: got %s; want %s\nsetup %+v\n%s",
				tr.seed, step, who, got, want, tr.setup, strings.Join(tr.log, "\n"))
			return false
		}
	}
}

func answer(v any, err error) string {
	if err != nil {
		return "error " + err.Error()
	}
	return fmt.Sprintf("%+v", v)
}
