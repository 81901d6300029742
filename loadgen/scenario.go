package loadgen

import (
	"fmt"
	"strings"
	"time"

	"github.com/lockbench/lockbench/internal/usage"
	"github.com/lockbench/lockbench/strategies"
)

// Scenario defaults, stated once (the README's flag table repeats them).
const (
	DefaultInstances      = 3
	DefaultWorkers        = 8
	DefaultPayments       = 3000
	DefaultDeliveries     = 2
	DefaultAccounts       = 100
	DefaultTTL            = 2 * time.Second
	DefaultAcquireTimeout = 5 * time.Second
	DefaultHold           = "1ms"
	DefaultSeed           = 1
	// DefaultFunding is the share of its payments' total that each account
	// starts with: 0.5, so accounts run dry and a broken balance check shows
	// as an overdraft.
	DefaultFunding = 0.5
	// MaxPayments bounds a --duration run with no --rate: 2,000,000.
	MaxPayments = 2_000_000
)

// Scenario is everything that shapes a run. Its YAML keys are the flag
// names with dashes turned to underscores, so a published scenario file can
// be re-run exactly.
type Scenario struct {
	Name string `yaml:"name"`
	// Variant labels the parameters that set this run apart from others of
	// the same strategy, scenario and fault ("instances=1"); "" when none.
	Variant        string        `yaml:"variant"`
	Instances      int           `yaml:"instances"`
	Workers        int           `yaml:"workers"`
	Payments       int           `yaml:"payments"`
	Duration       time.Duration `yaml:"duration"`
	Warmup         time.Duration `yaml:"warmup"`
	Rate           float64       `yaml:"rate"`
	Deliveries     int           `yaml:"deliveries"`
	Seed           int64         `yaml:"seed"`
	LockKey        string        `yaml:"lock_key"`
	Accounts       int           `yaml:"accounts"`
	AccountDist    AccountDist   `yaml:"account_dist"`
	Funding        float64       `yaml:"funding"`
	Hold           Hold          `yaml:"hold"`
	TTL            time.Duration `yaml:"ttl"`
	AcquireTimeout time.Duration `yaml:"acquire_timeout"`
	Retry          RetrySpec     `yaml:"retry"`
	Store          string        `yaml:"store"`
	Fencing        bool          `yaml:"fencing"`
	InstanceMode   string        `yaml:"instance_mode"`
}

// DefaultScenario returns the defaults above.
func DefaultScenario() Scenario {
	hold, _ := ParseHold(DefaultHold)
	dist, _ := ParseAccountDist("uniform")
	retry, _ := ParseRetry("backoff")
	return Scenario{
		Name:           "base",
		Instances:      DefaultInstances,
		Workers:        DefaultWorkers,
		Payments:       DefaultPayments,
		Deliveries:     DefaultDeliveries,
		Seed:           DefaultSeed,
		LockKey:        "account",
		Accounts:       DefaultAccounts,
		AccountDist:    dist,
		Funding:        DefaultFunding,
		Hold:           hold,
		TTL:            DefaultTTL,
		AcquireTimeout: DefaultAcquireTimeout,
		Retry:          retry,
		Store:          "memory",
		Fencing:        true,
		InstanceMode:   "goroutine",
	}
}

// usageErr is a bad field of the scenario, named by its flag.
var usageErr = usage.Errorf

// Validate reports the first bad field as a *usage.Error.
func (s *Scenario) Validate() error {
	switch {
	case s.Instances < 1 || s.Instances > 256:
		return usageErr("instances", "want 1..256, got %d", s.Instances)
	case s.Workers < 1 || s.Workers > 4096:
		return usageErr("workers", "want 1..4096, got %d", s.Workers)
	case s.Payments < 0:
		return usageErr("payments", "want ≥ 0, got %d", s.Payments)
	case s.Payments == 0 && s.Duration <= 0:
		return usageErr("payments", "want --payments N or --duration D (one of them > 0)")
	case s.Duration < 0:
		return usageErr("duration", "want a duration ≥ 0, got %s", s.Duration)
	case s.Warmup < 0:
		return usageErr("warmup", "want a duration ≥ 0, got %s", s.Warmup)
	case s.Rate < 0:
		return usageErr("rate", "want payments per second ≥ 0 (0 = closed loop), got %g", s.Rate)
	case s.Deliveries < 1:
		return usageErr("deliveries", "want ≥ 1, got %d", s.Deliveries)
	case s.Deliveries > s.Instances*s.Workers:
		return usageErr("deliveries", "want ≤ --instances × --workers (%d): deliveries go to distinct instances, then to distinct workers of one, got %d", s.Instances*s.Workers, s.Deliveries)
	case s.LockKey != "account" && s.LockKey != "payment":
		return usageErr("lock-key", "want account or payment, got %q", s.LockKey)
	case s.Accounts < 1:
		return usageErr("accounts", "want ≥ 1, got %d", s.Accounts)
	case s.Funding <= 0:
		return usageErr("funding", "want a share > 0 (0.5 = half of each account's payments), got %g", s.Funding)
	case s.TTL <= 0:
		return usageErr("ttl", "want a duration > 0, got %s", s.TTL)
	case s.AcquireTimeout <= 0:
		return usageErr("acquire-timeout", "want a duration > 0, got %s", s.AcquireTimeout)
	case s.Store != "memory" && s.Store != "postgres":
		return usageErr("store", "want memory or postgres, got %q", s.Store)
	case s.InstanceMode != "goroutine" && s.InstanceMode != "process":
		return usageErr("instance-mode", "want goroutine or process, got %q", s.InstanceMode)
	case s.Hold.text == "":
		return usageErr("hold", "want a duration (2ms), uniform:MIN-MAX or exp:MEAN")
	case s.AccountDist.text == "":
		return usageErr("account-dist", "want uniform, zipf:S or hot:F")
	}
	return nil
}

// PaymentCap is how many payments the run can offer at most.
func (s *Scenario) PaymentCap() int {
	if s.Payments > 0 {
		return s.Payments
	}
	if s.Rate > 0 {
		return int(s.Rate*(s.Duration+s.Warmup).Seconds()) + 1
	}
	return MaxPayments
}

// RetrySpec is the --retry policy: "none", "backoff" (the defaults of
// strategies.Retry) or "backoff:BASE-CAP" (e.g. backoff:1ms-50ms).
type RetrySpec struct {
	strategies.Retry
	text string
}

// ParseRetry parses a --retry value.
func ParseRetry(s string) (RetrySpec, error) {
	bad := fmt.Errorf("want none, backoff or backoff:BASE-CAP (e.g. backoff:1ms-50ms), got %q", s)
	if s == "none" {
		return RetrySpec{Retry: strategies.Retry{None: true}, text: s}, nil
	}
	kind, rest, has := strings.Cut(s, ":")
	if kind != "backoff" {
		return RetrySpec{}, bad
	}
	if !has {
		return RetrySpec{text: s}, nil
	}
	lo, hi, ok := strings.Cut(rest, "-")
	base, err1 := time.ParseDuration(lo)
	maxB, err2 := time.ParseDuration(hi)
	if !ok || err1 != nil || err2 != nil || base <= 0 || maxB < base {
		return RetrySpec{}, bad
	}
	return RetrySpec{Retry: strategies.Retry{Base: base, Cap: maxB}, text: s}, nil
}

// String returns the text the policy was parsed from.
func (r RetrySpec) String() string { return r.text }

// MarshalText and UnmarshalText let a RetrySpec sit in a YAML file.
func (r RetrySpec) MarshalText() ([]byte, error) { return []byte(r.text), nil }

// UnmarshalText parses a RetrySpec.
func (r *RetrySpec) UnmarshalText(b []byte) error {
	v, err := ParseRetry(string(b))
	if err != nil {
		return err
	}
	*r = v
	return nil
}
