package loadgen

import (
	"fmt"
	"math"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/lockbench/lockbench/internal/usage"
	"github.com/lockbench/lockbench/results"
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
)

// Scenario ranges. Validate refuses a value outside them with a usage
// error naming the flag, and the flags' help states them, so that bad
// input is refused before anything starts instead of failing (or running
// out of memory) half-way.
const (
	// MaxInstances bounds --instances: 256.
	MaxInstances = 256
	// MaxWorkers bounds --workers: 4096.
	MaxWorkers = 4096
	// MaxTotalWorkers bounds --instances × --workers: 65,536 goroutines.
	MaxTotalWorkers = 65_536
	// PaymentLimit bounds the payments a run offers: --payments, or
	// --rate × (--duration + --warmup): 100,000,000.
	PaymentLimit = 100_000_000
	// MaxDuration bounds --duration: 24h.
	MaxDuration = 24 * time.Hour
	// MaxWarmup bounds --warmup: 1h.
	MaxWarmup = time.Hour
	// MaxRate bounds --rate: 1,000,000 payments per second, far above what
	// one machine can offer.
	MaxRate = 1_000_000
	// MaxAccounts bounds --accounts: 2,147,483,647, what an account number
	// (int32) holds. Memory runs out long before (CheckMemory).
	MaxAccounts = math.MaxInt32
	// MaxFunding bounds --funding: 1000 times each account's payments.
	MaxFunding = 1000
	// MaxHold bounds --hold: its largest value, or an exp:MEAN's mean, at
	// most 1 minute.
	MaxHold = time.Minute
	// MinTTL is the shortest --ttl: 1ms, the resolution of the strategies'
	// leases (Redis PX, Postgres intervals). MaxTTL is the longest: 24h.
	MinTTL = time.Millisecond
	MaxTTL = 24 * time.Hour
	// MinAcquireTimeout and MaxAcquireTimeout bound --acquire-timeout:
	// 1ms..1h.
	MinAcquireTimeout = time.Millisecond
	MaxAcquireTimeout = time.Hour
	// MinBackoff and MaxBackoff bound backoff:BASE-CAP of --retry:
	// 1µs ≤ BASE ≤ CAP ≤ 1m.
	MinBackoff = time.Microsecond
	MaxBackoff = time.Minute
	// MaxZipfS bounds the skew S of --account-dist zipf:S: 1 < S ≤ 100.
	MaxZipfS = 100
	// MaxInterval bounds --interval: 1 minute.
	MaxInterval = time.Minute
	// MaxNameLen bounds --name and the variant: 64 characters.
	MaxNameLen = 64
)

// StoreKind names the store that judges a run (--store).
type StoreKind string

// The stores.
const (
	// StoreMemory is the store in the coordinator's memory.
	StoreMemory StoreKind = "memory"
	// StorePostgres is the store kept in PostgreSQL (store.Postgres).
	StorePostgres StoreKind = "postgres"
)

// InstanceMode is how a run's instances run (--instance-mode).
type InstanceMode string

// The instance modes.
const (
	// InstanceGoroutine runs every instance in the coordinator's process.
	InstanceGoroutine InstanceMode = "goroutine"
	// InstanceProcess runs each instance as a process of its own (local,
	// or on agents).
	InstanceProcess InstanceMode = "process"
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
	Store          StoreKind     `yaml:"store"`
	Fencing        bool          `yaml:"fencing"`
	InstanceMode   InstanceMode  `yaml:"instance_mode"`
	// Interval is the length of the run's latency intervals (the time
	// resolution of its interval logs and timeline); 0 means
	// IntervalLength. Fault runs, a few seconds long, use a shorter one.
	Interval time.Duration `yaml:"interval"`
	// FencingStrict, with Fencing, asks the store to also refuse a write
	// whose token is no newer than the last applied write's (--fencing
	// strict; store.Setup.Strict).
	FencingStrict bool `yaml:"fencing_strict"`
}

// MinInterval is the shortest latency interval a run may have: 10ms.
const MinInterval = 10 * time.Millisecond

// LatencyInterval is the length of the run's latency intervals: Interval,
// or IntervalLength when it is 0.
func (s *Scenario) LatencyInterval() time.Duration {
	if s.Interval > 0 {
		return s.Interval
	}
	return IntervalLength
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
		Store:          StoreMemory,
		Fencing:        true,
		InstanceMode:   InstanceGoroutine,
	}
}

// usageErr is a bad field of the scenario, named by its flag.
var usageErr = usage.Errorf

// Validate reports the first bad field as a *usage.Error: a value outside
// its range (the constants above), or a scenario whose payment stream and
// bank would not fit in the memory this machine has available
// (CheckMemory).
func (s *Scenario) Validate() error {
	switch {
	case !printable(s.Name) || utf8.RuneCountInString(s.Name) > MaxNameLen:
		return usageErr("name", "want at most %d printable characters, got %q", MaxNameLen, s.Name)
	case !printable(s.Variant) || utf8.RuneCountInString(s.Variant) > MaxNameLen:
		return usageErr("variant", "want at most %d printable characters, got %q", MaxNameLen, s.Variant)
	case s.Instances < 1 || s.Instances > MaxInstances:
		return usageErr("instances", "want 1..%d, got %d", MaxInstances, s.Instances)
	case s.Workers < 1 || s.Workers > MaxWorkers:
		return usageErr("workers", "want 1..%d, got %d", MaxWorkers, s.Workers)
	case s.Instances*s.Workers > MaxTotalWorkers:
		return usageErr("workers", "want --instances × --workers ≤ %d, got %d × %d", MaxTotalWorkers, s.Instances, s.Workers)
	case s.Payments < 0 || s.Payments > PaymentLimit:
		return usageErr("payments", "want 0..%d, got %d", PaymentLimit, s.Payments)
	case s.Duration < 0 || s.Duration > MaxDuration:
		return usageErr("duration", "want a duration in 0s..%s, got %s", MaxDuration, s.Duration)
	case s.Payments == 0 && s.Duration == 0:
		return usageErr("payments", "want --payments N or --duration D (one of them > 0)")
	case s.Warmup < 0 || s.Warmup > MaxWarmup:
		return usageErr("warmup", "want a duration in 0s..%s, got %s", MaxWarmup, s.Warmup)
	case !(s.Rate >= 0 && s.Rate <= MaxRate): // NaN too
		return usageErr("rate", "want payments per second in 0..%d (0 = closed loop), got %g", MaxRate, s.Rate)
	case s.Payments == 0 && s.Rate > 0 && s.Rate*(s.Duration+s.Warmup).Seconds() > PaymentLimit:
		return usageErr("rate", "want --rate × (--duration + --warmup) ≤ %d payments, got %g/s × %s", PaymentLimit, s.Rate, s.Duration+s.Warmup)
	case s.Duration == 0 && s.Rate > 0 && float64(s.Payments)/s.Rate > MaxDuration.Seconds():
		return usageErr("rate", "want --payments ÷ --rate (the run's length) ≤ %s, got %d ÷ %g/s", MaxDuration, s.Payments, s.Rate)
	case s.Deliveries < 1 || s.Deliveries > s.Instances*s.Workers:
		return usageErr("deliveries", "want 1..%d (--instances × --workers): deliveries go to distinct instances, then to distinct workers of one, got %d", s.Instances*s.Workers, s.Deliveries)
	case s.LockKey != "account" && s.LockKey != "payment":
		return usageErr("lock-key", "want account or payment, got %q", s.LockKey)
	case s.Accounts < 1 || s.Accounts > MaxAccounts:
		return usageErr("accounts", "want 1..%d, got %d", MaxAccounts, s.Accounts)
	case !(s.Funding > 0 && s.Funding <= MaxFunding):
		return usageErr("funding", "want a share in (0, %d] (0.5 = half of each account's payments), got %g", MaxFunding, s.Funding)
	case s.TTL < MinTTL || s.TTL > MaxTTL:
		return usageErr("ttl", "want a duration in %s..%s (%s is the strategies' resolution), got %s", MinTTL, MaxTTL, MinTTL, s.TTL)
	case s.AcquireTimeout < MinAcquireTimeout || s.AcquireTimeout > MaxAcquireTimeout:
		return usageErr("acquire-timeout", "want a duration in %s..%s, got %s", MinAcquireTimeout, MaxAcquireTimeout, s.AcquireTimeout)
	case s.Store != StoreMemory && s.Store != StorePostgres:
		return usageErr("store", "want memory or postgres, got %q", s.Store)
	case s.InstanceMode != InstanceGoroutine && s.InstanceMode != InstanceProcess:
		return usageErr("instance-mode", "want goroutine or process, got %q", s.InstanceMode)
	case s.Hold.text == "":
		return usageErr("hold", "want a duration (2ms), uniform:MIN-MAX or exp:MEAN")
	case holdBound(s.Hold) > MaxHold:
		return usageErr("hold", "want holds of at most %s (an exp:MEAN's mean), got %s", MaxHold, s.Hold)
	case s.AccountDist.text == "":
		return usageErr("account-dist", "want uniform, zipf:S or hot:F")
	case s.AccountDist.kind == "zipf" && !(s.AccountDist.s > 1 && s.AccountDist.s <= MaxZipfS):
		return usageErr("account-dist", "want zipf:S with 1 < S ≤ %d, got %s", MaxZipfS, s.AccountDist)
	case s.AccountDist.kind == "hot" && !(s.AccountDist.s > 0 && s.AccountDist.s <= 1):
		return usageErr("account-dist", "want hot:F with 0 < F ≤ 1, got %s", s.AccountDist)
	case s.Interval != 0 && (s.Interval < MinInterval || s.Interval > MaxInterval):
		return usageErr("interval", "want a duration in %s..%s such as 250ms (0 = %s), got %s", MinInterval, MaxInterval, IntervalLength, s.Interval)
	}
	return s.CheckMemory()
}

// holdBound is the hold's largest value, or an exp:MEAN's mean (its
// largest is unbounded).
func holdBound(h Hold) time.Duration {
	if h.kind == "exp" {
		return h.mean
	}
	return h.max
}

// printable reports whether s is valid UTF-8 without control characters:
// names end up in tables, file names and one-line messages.
func printable(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}

// Memory estimate of a run: what the arrays sized by the scenario take.
// Per account: the opening balance and its running total while the bank is
// funded (16 B), the memory store's account (64 B) and, in account mode,
// its overlap start (8 B). Per payment in flight (one in hand per worker,
// and as many as its instance's queue holds, QueueDepth) the memory store
// tracks a
// paymentState (64 B, twice over in its table's free slots) and per
// application in flight one recordVersion (24 B, twice over as its log
// grows); a payment's state is released once every delivery of it is
// judged, so nothing grows with the payments offered. Each latency
// interval the run keeps holds one histogram per phase (about 180 KB each).
const (
	bytesPerPayment         = 2 * 64
	bytesPerDelivery        = 2 * 24
	bytesPerAccount         = 16 + 64
	bytesPerAccountLockKey  = 8
	garbageCollectorOverrun = 2
)

// intervalBytes is what one latency interval keeps: a histogram per phase.
var intervalBytes = sync.OnceValue(func() int64 {
	return int64(results.NumPhases) * int64(results.NewHistogram().ByteSize())
})

// Memory is CheckMemory's estimate of what a run of the scenario holds, by
// what sizes it.
type Memory struct {
	Accounts, Payments, Intervals int64 // bytes
}

// Total is the estimate in bytes, twice the arrays: the garbage collector
// lets the heap grow to twice what is live before it collects.
func (m Memory) Total() int64 {
	return garbageCollectorOverrun * (m.Accounts + m.Payments + m.Intervals)
}

// MemoryEstimate estimates the memory a run of s holds (see Memory). It
// assumes s is within the ranges Validate checks.
func (s *Scenario) MemoryEstimate() Memory {
	perAccount, perPayment := int64(bytesPerAccount), int64(bytesPerPayment+s.Deliveries*bytesPerDelivery)
	if s.LockKey != "payment" {
		perAccount += bytesPerAccountLockKey
	}
	inFlight := int64(s.Instances * (s.Workers + QueueDepth(s.Workers)))
	if n, ok := s.PaymentBound(); ok {
		inFlight = min(inFlight, int64(n))
	}
	m := Memory{Accounts: int64(s.Accounts) * perAccount, Payments: inFlight * perPayment}
	// The run's length, when the scenario says it: intervals are kept for
	// the whole run unless they stream to a log (Options.IntervalLog).
	length := s.Duration + s.Warmup
	if s.Duration == 0 && s.Rate > 0 {
		length = time.Duration(float64(s.Payments)/s.Rate*float64(time.Second)) + s.Warmup
	}
	if length > 0 {
		m.Intervals = (int64(length/s.LatencyInterval()) + 1) * intervalBytes()
	}
	return m
}

// CheckMemory refuses a scenario whose estimated memory (MemoryEstimate)
// is more than the machine has available now (usage.MemAvailable), with a
// usage error naming the flag that sizes most of it: a clear refusal
// instead of an out-of-memory crash once the run has started. Where the
// available memory is unknown it checks nothing.
func (s *Scenario) CheckMemory() error {
	avail, ok := usage.MemAvailable()
	if !ok {
		return nil
	}
	m := s.MemoryEstimate()
	if m.Total() <= avail {
		return nil
	}
	flag, what := "accounts", "fewer accounts"
	switch {
	case m.Payments >= m.Accounts && m.Payments >= m.Intervals:
		flag, what = "payments", "fewer payments (--payments, or --rate × --duration)"
		if s.Payments == 0 && s.Rate > 0 {
			flag = "rate"
		}
	case m.Intervals >= m.Accounts:
		flag, what = "duration", "a shorter run or a longer --interval"
	}
	intervals := ""
	if m.Intervals > 0 {
		intervals = ", latency intervals: " + usage.FormatBytes(m.Intervals)
	}
	return usageErr(flag, "the scenario needs about %s of memory (%d accounts: %s, payments in flight: %s%s, twice over for the garbage collector); %s is available (MemAvailable); want %s",
		usage.FormatBytes(m.Total()), s.Accounts, usage.FormatBytes(m.Accounts), usage.FormatBytes(m.Payments),
		intervals, usage.FormatBytes(avail), what)
}

// PaymentBound is how many payments the run offers at most, and whether it
// has a bound: --payments N, or --rate × (--duration + --warmup) (plus one).
// A closed-loop --duration run has none: it offers payments until its
// duration is over, however many that is.
func (s *Scenario) PaymentBound() (int, bool) {
	if s.Payments > 0 {
		return s.Payments, true
	}
	if s.Rate > 0 {
		return int(s.Rate*(s.Duration+s.Warmup).Seconds()) + 1, true
	}
	return 0, false
}

// RetrySpec is the --retry policy: "none", "backoff" (the defaults of
// strategies.Retry) or "backoff:BASE-CAP" (e.g. backoff:1ms-50ms).
type RetrySpec struct {
	strategies.Retry
	text string
}

// ParseRetry parses a --retry value; BASE and CAP are within
// MinBackoff..MaxBackoff.
func ParseRetry(s string) (RetrySpec, error) {
	bad := fmt.Errorf("want none, backoff or backoff:BASE-CAP with %s ≤ BASE ≤ CAP ≤ %s (e.g. backoff:1ms-50ms), got %q", MinBackoff, MaxBackoff, s)
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
	if !ok || err1 != nil || err2 != nil || base < MinBackoff || maxB < base || maxB > MaxBackoff {
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
