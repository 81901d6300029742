package loadgen

import (
	"errors"
	"math/rand/v2"
	"testing"
	"time"
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
		{"deliveries", func(s *Scenario) { s.Deliveries = 4 }}, // > 3 instances
		{"ttl", func(s *Scenario) { s.TTL = 0 }},
		{"lock-key", func(s *Scenario) { s.LockKey = "user" }},
		{"payments", func(s *Scenario) { s.Payments = 0 }}, // and no duration
		{"store", func(s *Scenario) { s.Store = "mysql" }},
	}
	for _, tc := range cases {
		s := DefaultScenario()
		tc.mut(&s)
		var ue *UsageError
		if err := s.Validate(); !errors.As(err, &ue) || ue.Flag != tc.flag {
			t.Errorf("Validate() = %v; want a UsageError for --%s", err, tc.flag)
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
	for i := range a.Payments {
		if a.Payments[i] != b.Payments[i] {
			t.Fatalf("payment %d differs between runs with one seed: %+v vs %+v", i, a.Payments[i], b.Payments[i])
		}
		seen := map[int]bool{}
		for _, in := range a.Targets[i] {
			if seen[in] || in < 0 || in >= s.Instances {
				t.Fatalf("payment %d targets %v; want %d distinct instances", i, a.Targets[i], s.Deliveries)
			}
			seen[in] = true
		}
	}
	s.Seed = 2
	c := NewWorkload(&s)
	same := 0
	for i := range a.Payments {
		if a.Payments[i] == c.Payments[i] {
			same++
		}
	}
	if same == len(a.Payments) {
		t.Errorf("seeds 1 and 2 gave the same payments")
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
