package loadgen

import (
	"encoding"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/lockbench/lockbench/internal/usage"
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

// FaultInterval is the latency interval of a run with a fault, unless
// --interval says otherwise: 250ms. Fault runs last a few seconds, and at
// one interval a second the timeline would show a fault's shape in three
// points.
const FaultInterval = 250 * time.Millisecond

// ScenarioFlag is a row of the scenario table: a field of Scenario as a
// flag, named by the field's YAML key with - for _.
type ScenarioFlag struct {
	Name, Usage string
	// Parse reads a flag's value into a setter of the field, refusing what
	// the field's type cannot hold; Validate checks the ranges Usage
	// states, for flags and scenario files alike.
	Parse func(v string) (set func(*Scenario), err error)
}

// ScenarioFlags is the scenario table: every field of Scenario but Variant
// (a run's label, set by the commands) and FencingStrict (--fencing
// strict). Adding a field to Scenario adds its row here, and its
// results.Params field; TestScenarioTable holds the three together.
func ScenarioFlags() []ScenarioFlag {
	d := DefaultScenario()
	return []ScenarioFlag{
		field("name", fmt.Sprintf("scenario name recorded in the results, at most %d printable characters (default base)", MaxNameLen)),
		field("instances", fmt.Sprintf("app instances, each with its own strategy object, 1..%d (default %d)", MaxInstances, d.Instances)),
		field("workers", fmt.Sprintf("concurrent workers per instance, 1..%d (and instances × workers ≤ %d) (default %d)", MaxWorkers, MaxTotalWorkers, d.Workers)),
		field("payments", fmt.Sprintf("payments to offer, 0..%d (0 with --duration: until the duration ends, at any rate) (default %d)", PaymentLimit, d.Payments)),
		{Name: "duration", Usage: fmt.Sprintf("run for this long instead of a payment count, 0s..%s (default 0s)", MaxDuration),
			Parse: func(v string) (func(*Scenario), error) {
				x, err := time.ParseDuration(v)
				if err != nil {
					return nil, errors.New(wantDuration)
				}
				return func(s *Scenario) { s.Duration, s.Payments = x, 0 }, nil
			}},
		field("warmup", fmt.Sprintf("unrecorded warmup before measuring, 0s..%s (default 0s)", MaxWarmup)),
		field("rate", fmt.Sprintf("open-loop payments per second, 0..%d; 0 = closed loop (default 0)", MaxRate)).wanting("payments per second (0 = closed loop)"),
		field("deliveries", fmt.Sprintf("deliveries of each payment: to distinct instances, then to distinct workers of one, 1..instances × workers (default %d)", d.Deliveries)),
		field("seed", "seed of the payment stream, any 64-bit integer (default 1)"),
		choice("lock-key", "what the lock guards: account or payment (default account)", "account", "payment"),
		field("accounts", fmt.Sprintf("number of accounts, 1..%d, as memory allows (default %d)", MaxAccounts, d.Accounts)),
		field("account-dist", fmt.Sprintf("account choice: uniform, zipf:S (1 < S ≤ %d) or hot:F (0 < F ≤ 1) (default uniform)", MaxZipfS)),
		field("funding", fmt.Sprintf("share of its payments' total each account starts with, in (0, %d] (default %g)", MaxFunding, d.Funding)),
		field("hold", fmt.Sprintf("work inside the lock: a duration, uniform:MIN-MAX or exp:MEAN, at most %s (default 1ms)", MaxHold)),
		field("ttl", fmt.Sprintf("lock TTL, %s..%s (default %s)", MinTTL, MaxTTL, d.TTL)),
		field("acquire-timeout", fmt.Sprintf("give up on the lock after this long, %s..%s (default %s)", MinAcquireTimeout, MaxAcquireTimeout, d.AcquireTimeout)),
		field("retry", fmt.Sprintf("retry policy: none, backoff or backoff:BASE-CAP with %s ≤ BASE ≤ CAP ≤ %s (default backoff = 1ms..50ms, jittered)", MinBackoff, MaxBackoff)),
		choice("store", "the protected store: memory or postgres (default memory)", string(StoreMemory), string(StorePostgres)),
		{Name: "fencing", Usage: "store checks fencing tokens: on (refuse a token older than the newest seen), strict (also one no newer than the last applied write's: a token handed out twice) or off (default on)",
			Parse: func(v string) (func(*Scenario), error) {
				if v != "on" && v != "off" && v != "strict" {
					return nil, errors.New("want on, off or strict")
				}
				return func(s *Scenario) { s.Fencing, s.FencingStrict = v != "off", v == "strict" }, nil
			}},
		{Name: "interval", Usage: fmt.Sprintf("length of the latency intervals, %s..%s (default %s; %s for a run with a fault)", MinInterval, MaxInterval, IntervalLength, FaultInterval),
			Parse: func(v string) (func(*Scenario), error) {
				x, err := time.ParseDuration(v)
				if err != nil || x < MinInterval || x > MaxInterval {
					return nil, fmt.Errorf("want a duration in %s..%s such as 250ms", MinInterval, MaxInterval)
				}
				return func(s *Scenario) { s.Interval = x }, nil
			}},
		choice("instance-mode", "instances as goroutine or process (default goroutine; with --agents, process)", string(InstanceGoroutine), string(InstanceProcess)),
	}
}

const wantDuration = "want a duration such as 500ms or 2s"

// field is the row of the Scenario field whose YAML key is name with _
// for -: its value parses as the field's type says.
func field(name, usage string) ScenarioFlag {
	i := scenarioField(strings.ReplaceAll(name, "-", "_"))
	t := reflect.TypeFor[Scenario]().Field(i).Type
	return ScenarioFlag{Name: name, Usage: usage, Parse: func(v string) (func(*Scenario), error) {
		x, err := parseAs(t, v)
		if err != nil {
			return nil, err
		}
		return func(s *Scenario) { reflect.ValueOf(s).Elem().Field(i).Set(x) }, nil
	}}
}

// wanting is f with its refusal saying "want" what.
func (f ScenarioFlag) wanting(what string) ScenarioFlag {
	parse := f.Parse
	f.Parse = func(v string) (func(*Scenario), error) {
		set, err := parse(v)
		if err != nil {
			return nil, errors.New("want " + what)
		}
		return set, nil
	}
	return f
}

// choice is the row of a string field that takes one of values.
func choice(name, usage string, values ...string) ScenarioFlag {
	f := field(name, usage)
	parse := f.Parse
	f.Parse = func(v string) (func(*Scenario), error) {
		if !slices.Contains(values, v) {
			return nil, fmt.Errorf("want %s or %s", strings.Join(values[:len(values)-1], ", "), values[len(values)-1])
		}
		return parse(v)
	}
	return f
}

// scenarioField is the index of the Scenario field whose YAML key is key;
// a key no field has is a mistake in the table, found by any test.
func scenarioField(key string) int {
	t := reflect.TypeFor[Scenario]()
	for i := range t.NumField() {
		if t.Field(i).Tag.Get("yaml") == key {
			return i
		}
	}
	panic("loadgen: no Scenario field has the YAML key " + key)
}

var durationType = reflect.TypeFor[time.Duration]()

// parseAs parses v as a value of type t: a duration, a number, a string,
// or a type that parses itself (encoding.TextUnmarshaler: Hold,
// AccountDist, RetrySpec).
func parseAs(t reflect.Type, v string) (reflect.Value, error) {
	x := reflect.New(t)
	if u, ok := x.Interface().(encoding.TextUnmarshaler); ok {
		return x.Elem(), u.UnmarshalText([]byte(v))
	}
	var err error
	switch {
	case t == durationType:
		var d time.Duration
		if d, err = time.ParseDuration(v); err != nil {
			return x, errors.New(wantDuration)
		}
		x.Elem().SetInt(int64(d))
	case t.Kind() == reflect.Int || t.Kind() == reflect.Int64:
		var n int64
		if n, err = strconv.ParseInt(v, 10, t.Bits()); err != nil {
			return x, errors.New("want an integer")
		}
		x.Elem().SetInt(n)
	case t.Kind() == reflect.Float64:
		var f float64
		if f, err = strconv.ParseFloat(v, 64); err != nil {
			return x, errors.New("want a number")
		}
		x.Elem().SetFloat(f)
	case t.Kind() == reflect.String:
		x.Elem().SetString(v)
	default:
		panic("loadgen: a scenario field of type " + t.String() + " needs its own Parse")
	}
	return x.Elem(), nil
}
