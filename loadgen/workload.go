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

// Workload is the reproducible payment stream of a scenario and the bank it
// runs against: the same Seed gives the same payments, targets and balances.
type Workload struct {
	Payments []Payment
	// Targets[i] are the distinct instances payment i is delivered to.
	Targets [][]int
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
		Targets:  make([][]int, n),
		Balances: make([]int64, s.Accounts),
	}
	perm := make([]int, s.Instances)
	flat := make([]int, n*s.Deliveries)
	totals := make([]int64, s.Accounts)
	for i := range w.Payments {
		a := pick()
		amt := 1 + r.Int64N(MaxAmount)
		w.Payments[i] = Payment{ID: int64(i), Account: int32(a), Amount: amt}
		totals[a] += amt
		// K distinct instances: a partial Fisher–Yates shuffle.
		for j := range perm {
			perm[j] = j
		}
		t := flat[i*s.Deliveries : (i+1)*s.Deliveries : (i+1)*s.Deliveries]
		for j := range t {
			k := j + r.IntN(len(perm)-j)
			perm[j], perm[k] = perm[k], perm[j]
			t[j] = perm[j]
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
