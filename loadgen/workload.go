package loadgen

import (
	"math"
	"math/rand/v2"
)

// Payment is one payment of the tiny bank.
type Payment struct {
	ID      int64
	Account int32
	Amount  int64
}

// MaxAmount bounds a payment's amount: amounts are uniform in 1..100.
const MaxAmount = 100

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
// runs against: the same Seed gives the same payments, targets and balances.
type Workload struct {
	Payments []Payment
	// Targets[i] are where payment i's deliveries go: distinct instances
	// first, then distinct workers of an instance.
	Targets [][]Target
	// Balances are the opening balances, per account.
	Balances []int64
}

// NewWorkload generates the payment stream of s.
func NewWorkload(s *Scenario) *Workload {
	n := s.PaymentCap()
	r := rand.New(rand.NewPCG(uint64(s.Seed), 0x10cb))
	pick := s.AccountDist.picker(r, s.Accounts)
	w := &Workload{
		Payments: make([]Payment, n),
		Targets:  make([][]Target, n),
		Balances: make([]int64, s.Accounts),
	}
	perm := make([]int, s.Instances)
	flat := make([]Target, n*s.Deliveries)
	shared := min(s.Deliveries, s.Instances) // distinct instances
	routed := s.Deliveries > s.Instances
	totals := make([]int64, s.Accounts)
	for i := range w.Payments {
		a := pick()
		amt := 1 + r.Int64N(MaxAmount)
		w.Payments[i] = Payment{ID: int64(i), Account: int32(a), Amount: amt}
		totals[a] += amt
		// min(K, instances) distinct instances: a partial Fisher–Yates
		// shuffle.
		for j := range perm {
			perm[j] = j
		}
		for j := range shared {
			k := j + r.IntN(len(perm)-j)
			perm[j], perm[k] = perm[k], perm[j]
		}
		t := flat[i*s.Deliveries : (i+1)*s.Deliveries : (i+1)*s.Deliveries]
		if !routed {
			for j := range t {
				t[j] = Target{Instance: perm[j], Worker: -1}
			}
		} else {
			// Round j/instances of the deliveries goes to worker
			// offset+round of each instance: distinct workers, since
			// there are at most Workers rounds, and a random offset so
			// that no worker takes every first copy.
			offset := r.IntN(s.Workers)
			for j := range t {
				t[j] = Target{Instance: perm[j%s.Instances], Worker: (offset + j/s.Instances) % s.Workers}
			}
		}
		w.Targets[i] = t
	}
	for a, total := range totals {
		w.Balances[a] = int64(math.Round(float64(total) * s.Funding))
	}
	return w
}

// PaymentAccounts returns the account of each payment, for the store.
func (w *Workload) PaymentAccounts() []int32 {
	out := make([]int32, len(w.Payments))
	for i, p := range w.Payments {
		out[i] = p.Account
	}
	return out
}
