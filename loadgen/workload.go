package loadgen

import (
	"math"
	"math/rand/v2"
	"slices"
	"sync"
)

// Payment is one payment of the tiny bank.
type Payment struct {
	ID      int64
	Account int32
	Amount  int64
}

// MaxAmount bounds a payment's amount: amounts are uniform in 1..100.
const MaxAmount = 100

// FundingHorizon is how many payments fund the bank of a run whose length
// in payments is not known up front (a closed-loop --duration run):
// 2,000,000, what such a run could offer when its stream was generated up
// front, so that its opening balances are those it always had.
const FundingHorizon = 2_000_000

// Target is where one delivery of a payment goes: an instance and, when
// several deliveries of the payment land on that instance (more deliveries
// than instances: two requests for one payment on one server), the worker
// that takes it, so that the copies really run at the same time. Worker is
// -1 when the delivery goes to whichever of the instance's workers is free.
type Target struct {
	Instance int
	Worker   int
}

// Workload is the reproducible payment stream of a scenario and the bank it
// runs against: the same Seed gives the same payments, targets and
// balances. Payments are generated as they are taken (Next), so a run holds
// one payment at a time however long it is. Opening balances are Funding
// (0.5 by default) times each account's payments over the funding horizon:
// the whole run when its length is known, else the first FundingHorizon
// payments. See "Funding" in the package doc.
type Workload struct {
	// Balances are the opening balances, per account.
	Balances []int64
	g        generator
}

// generator is the stream itself: one random source drawn in a fixed
// order per payment (account, amount, instances, worker offset).
type generator struct {
	deliveries, instances, workers int
	r                              *rand.Rand
	pick                           func() int
	perm                           []int
	targets                        []Target
	next                           int64
}

func newGenerator(s *Scenario) generator {
	r := rand.New(rand.NewPCG(uint64(s.Seed), 0x10cb))
	return generator{
		deliveries: s.Deliveries, instances: s.Instances, workers: s.Workers,
		r: r, pick: s.AccountDist.picker(r, s.Accounts),
		perm: make([]int, s.Instances), targets: make([]Target, s.Deliveries),
	}
}

// NewWorkload starts the payment stream of s and computes its opening
// balances (see Workload).
func NewWorkload(s *Scenario) *Workload {
	return &Workload{Balances: fundedBalances(s), g: newGenerator(s)}
}

// fundingKey is what a bank's opening balances depend on: the stream's
// parameters, the horizon and the funding.
type fundingKey struct {
	seed                           int64
	accounts                       int
	dist                           AccountDist
	deliveries, instances, workers int
	horizon                        int
	funding                        float64
}

// funded keeps the opening balances of the last few banks: the trials and
// strategies of a matrix, and a test's many short runs, share a bank, and
// a duration run's scan of FundingHorizon payments is its set-up's
// largest cost (about 40 ms; ten times that under the race detector).
var funded struct {
	sync.Mutex
	banks map[fundingKey][]int64
}

// fundedBalances returns a copy of s's opening balances, computed once per
// bank while it stays among the last few.
func fundedBalances(s *Scenario) []int64 {
	k := fundingKey{s.Seed, s.Accounts, s.AccountDist, s.Deliveries, s.Instances, s.Workers, s.fundingHorizon(), s.Funding}
	funded.Lock()
	b, ok := funded.banks[k]
	funded.Unlock()
	if !ok {
		b = scanBalances(s, k.horizon)
		funded.Lock()
		if len(funded.banks) >= 8 {
			funded.banks = nil
		}
		if funded.banks == nil {
			funded.banks = make(map[fundingKey][]int64)
		}
		funded.banks[k] = b
		funded.Unlock()
	}
	return slices.Clone(b)
}

// scanBalances computes s's opening balances from the first horizon
// payments of its stream.
func scanBalances(s *Scenario, horizon int) []int64 {
	totals := make([]int64, s.Accounts)
	scan := newGenerator(s)
	for range horizon {
		p, _ := scan.next1()
		totals[p.Account] += p.Amount
	}
	for a, total := range totals {
		totals[a] = int64(math.Round(float64(total) * s.Funding))
	}
	return totals
}

// fundingHorizon is how many payments fund the bank (see Workload).
func (s *Scenario) fundingHorizon() int {
	if n, ok := s.PaymentBound(); ok {
		return n
	}
	return FundingHorizon
}

// Next returns the next payment of the stream (ids count from 0) and where
// its deliveries go: distinct instances first, then distinct workers of an
// instance. The targets are valid until the next call.
func (w *Workload) Next() (Payment, []Target) { return w.g.next1() }

func (g *generator) next1() (Payment, []Target) {
	r := g.r
	a := g.pick()
	p := Payment{ID: g.next, Account: int32(a), Amount: 1 + r.Int64N(MaxAmount)}
	g.next++
	// min(K, instances) distinct instances: a partial Fisher–Yates
	// shuffle.
	for j := range g.perm {
		g.perm[j] = j
	}
	for j := range min(g.deliveries, g.instances) {
		k := j + r.IntN(len(g.perm)-j)
		g.perm[j], g.perm[k] = g.perm[k], g.perm[j]
	}
	t := g.targets
	if g.deliveries <= g.instances {
		for j := range t {
			t[j] = Target{Instance: g.perm[j], Worker: -1}
		}
	} else {
		// Round j/instances of the deliveries goes to worker offset+round
		// of each instance: distinct workers, since there are at most
		// Workers rounds, and a random offset so that no worker takes
		// every first copy.
		offset := r.IntN(g.workers)
		for j := range t {
			t[j] = Target{Instance: g.perm[j%g.instances], Worker: (offset + j/g.instances) % g.workers}
		}
	}
	return p, t
}
