package loadgen

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/lockbench/lockbench/internal/usage"
)

func TestParseHold(t *testing.T) {
	cases := []struct {
		in       string
		ok       bool
		min, max time.Duration
	}{
		{"2ms", true, 2 * time.Millisecond, 2 * time.Millisecond}, // fixed
		{"0s", true, 0, 0}, // no work at all
		{"uniform:1ms-5ms", true, time.Millisecond, 5 * time.Millisecond}, // range
		{"exp:2ms", true, 0, 1<<63 - 1},                                   // unbounded tail
		{"uniform:5ms-1ms", false, 0, 0},                                  // inverted range
		{"uniform:5ms", false, 0, 0},                                      // missing max
		{"exp:0s", false, 0, 0},                                           // mean must be > 0
		{"-1ms", false, 0, 0},                                             // negative
		{"gauss:1ms", false, 0, 0},                                        // unknown kind
	}
	r := rand.New(rand.NewPCG(1, 2))
	for _, tc := range cases {
		h, err := ParseHold(tc.in)
		if (err == nil) != tc.ok {
			t.Errorf("ParseHold(%q) error = %v; want ok=%v", tc.in, err, tc.ok)
			continue
		}
		if !tc.ok {
			continue
		}
		for range 1000 {
			if d := h.Sample(r); d < tc.min || d > tc.max {
				t.Fatalf("ParseHold(%q).Sample() = %v; want within [%v, %v]", tc.in, d, tc.min, tc.max)
			}
		}
	}
}

func TestAccountDist(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	hot, err := ParseAccountDist("hot:0.9")
	if err != nil {
		t.Fatal(err)
	}
	pick := hot.picker(r, 100)
	zero := 0
	for range 10000 {
		if pick() == 0 {
			zero++
		}
	}
	// 90% forced to account 0, plus 1% of the uniform rest.
	if zero < 8800 || zero > 9300 {
		t.Errorf("hot:0.9 picked account 0 %d times in 10000; want about 9010", zero)
	}
	z, _ := ParseAccountDist("zipf:1.5")
	pz := z.picker(r, 100)
	for range 1000 {
		if a := pz(); a < 0 || a >= 100 {
			t.Fatalf("zipf picked %d; want 0..99", a)
		}
	}
	for _, bad := range []string{"zipf:1", "hot:0", "hot:1.5", "uniform:2", "normal"} {
		if _, err := ParseAccountDist(bad); err == nil {
			t.Errorf("ParseAccountDist(%q) = nil error; want an error", bad)
		}
	}
}

func TestValidate(t *testing.T) {
	cases := []struct {
		flag string
		mut  func(*Scenario)
	}{
		{"rate", func(s *Scenario) { s.Rate = -1 }},
		{"deliveries", func(s *Scenario) { s.Deliveries = s.Instances*s.Workers + 1 }}, // more than every worker of every instance
		{"ttl", func(s *Scenario) { s.TTL = 0 }},
		{"lock-key", func(s *Scenario) { s.LockKey = "user" }},
		{"payments", func(s *Scenario) { s.Payments = 0 }}, // and no duration
		{"store", func(s *Scenario) { s.Store = "mysql" }},
	}
	for _, tc := range cases {
		s := DefaultScenario()
		tc.mut(&s)
		var ue *usage.Error
		if err := s.Validate(); !errors.As(err, &ue) || ue.Flag != tc.flag {
			t.Errorf("Validate() = %v; want a usage.Error for --%s", err, tc.flag)
		}
	}
	s := DefaultScenario()
	if err := s.Validate(); err != nil {
		t.Errorf("DefaultScenario().Validate() = %v; want nil", err)
	}
}

// The same seed gives the same payments, targets and balances; every
// payment goes to distinct instances.
func TestWorkloadReproducible(t *testing.T) {
	s := DefaultScenario()
	a, b := NewWorkload(&s), NewWorkload(&s)
	if !slices.Equal(a.Balances, b.Balances) {
		t.Fatalf("balances differ between runs with one seed")
	}
	s.Seed = 2
	c := NewWorkload(&s)
	same := 0
	for i := range s.Payments {
		pa, ta := a.Next()
		ta = slices.Clone(ta)
		pb, tb := b.Next()
		if pa != pb || !slices.Equal(ta, tb) {
			t.Fatalf("payment %d differs between runs with one seed: %+v %v vs %+v %v", i, pa, ta, pb, tb)
		}
		if pa.ID != int64(i) {
			t.Fatalf("payment %d has id %d; want %d", i, pa.ID, i)
		}
		seen := map[int]bool{}
		for _, tg := range ta {
			if seen[tg.Instance] || tg.Instance < 0 || tg.Instance >= s.Instances || tg.Worker != -1 {
				t.Fatalf("payment %d targets %v; want %d distinct instances, any worker", i, ta, s.Deliveries)
			}
			seen[tg.Instance] = true
		}
		if pc, _ := c.Next(); pc == pa {
			same++
		}
	}
	if same == s.Payments {
		t.Errorf("seeds 1 and 2 gave the same payments")
	}
}

// A run's bank is funded from the payments it will offer: Funding times
// each account's total over the whole run when it has a bound, over the
// first FundingHorizon payments when it has none.
func TestWorkloadBalances(t *testing.T) {
	for _, tc := range []struct {
		name    string
		set     func(*Scenario)
		horizon int
	}{
		// --payments 5000: the whole run.
		{"payments", func(s *Scenario) { s.Payments = 5000 }, 5000},
		// --rate 100 --duration 30s --warmup 2s: 3,201 payments at most.
		{"rate", func(s *Scenario) { s.Payments, s.Rate, s.Duration, s.Warmup = 0, 100, 30*time.Second, 2*time.Second }, 3201},
		// --duration 10s, closed loop: no bound, the horizon.
		{"duration", func(s *Scenario) { s.Payments, s.Duration = 0, 10*time.Second }, FundingHorizon},
	} {
		s := DefaultScenario()
		tc.set(&s)
		w := NewWorkload(&s)
		totals := make([]int64, s.Accounts)
		for range tc.horizon {
			p, _ := w.Next()
			totals[p.Account] += p.Amount
		}
		for a, total := range totals {
			if want := int64(math.Round(float64(total) * s.Funding)); w.Balances[a] != want {
				t.Fatalf("%s: account %d opens with %d; want %g × %d = %d", tc.name, a, w.Balances[a], s.Funding, total, want)
			}
		}
	}
}

// More deliveries than instances: distinct instances first, then distinct
// workers of an instance, so that no two copies of a payment wait for one
// worker.
func TestWorkloadRoutesToWorkers(t *testing.T) {
	for _, tc := range []struct {
		instances, workers, deliveries int
	}{
		{1, 4, 2}, // a monolith: two requests on one server
		{2, 3, 5}, // two rounds and a half
		{3, 2, 6}, // every worker of every instance
	} {
		s := DefaultScenario()
		s.Instances, s.Workers, s.Deliveries = tc.instances, tc.workers, tc.deliveries
		if err := s.Validate(); err != nil {
			t.Fatalf("%+v: Validate() = %v; want nil", tc, err)
		}
		w := NewWorkload(&s)
		for i := range s.Payments {
			_, ts := w.Next()
			if len(ts) != tc.deliveries {
				t.Fatalf("%+v: payment %d has %d targets; want %d", tc, i, len(ts), tc.deliveries)
			}
			perInstance := map[int]int{}
			seen := map[Target]bool{}
			for _, tg := range ts {
				if tg.Instance < 0 || tg.Instance >= tc.instances || tg.Worker < 0 || tg.Worker >= tc.workers || seen[tg] {
					t.Fatalf("%+v: payment %d targets %v; want distinct (instance, worker) pairs in range", tc, i, ts)
				}
				seen[tg] = true
				perInstance[tg.Instance]++
			}
			// Spread over instances first: counts differ by at most one.
			lo, hi := tc.deliveries, 0
			for in := range tc.instances {
				lo, hi = min(lo, perInstance[in]), max(hi, perInstance[in])
			}
			if hi-lo > 1 {
				t.Fatalf("%+v: payment %d targets %v; want the deliveries spread over the instances first", tc, i, ts)
			}
		}
	}
}

func TestConstantPacer(t *testing.T) {
	p := NewPacer(1000)
	if at, ok := p.Intended(500); !ok || at != 500*time.Millisecond {
		t.Errorf("Intended(500) at 1000/s = %v, %v; want 500ms, true", at, ok)
	}
	if _, ok := NewPacer(0).Intended(3); ok {
		t.Errorf("closed loop has a schedule; want none")
	}
}
