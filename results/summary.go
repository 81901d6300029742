package results

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Summary is one strategy × scenario × fault run: one element of
// summary.json. The JSON field names (the README's field table) are a
// contract with users'
// scripts; add fields, never rename them. Times are nanoseconds.
type Summary struct {
	Strategy string `json:"strategy"`
	Scenario string `json:"scenario"`
	Fault    string `json:"fault"`
	// Variant is a short label of the parameters that set this run apart
	// from others of the same strategy, scenario and fault
	// ("instances=1"); "" when none.
	Variant string `json:"variant"`
	// Trial is which of the cell's trials this run is, 1…N (--trials N
	// runs each cell N times with seeds seed, seed+1, …); files written
	// before trials existed read as 0, which means 1.
	Trial   int  `json:"trial"`
	Fencing bool `json:"fencing"`
	// Verdict is the run's judgement: VerdictSafe, VerdictUnsafe or
	// VerdictUnknown (the run could not judge: see Finish). Unsafe is
	// whether it is VerdictUnsafe, kept for scripts written before it.
	Verdict string `json:"verdict"`
	// Unjudged says why the verdict is unknown; "" otherwise.
	Unjudged string `json:"unjudged,omitempty"`
	Unsafe   bool   `json:"unsafe"`

	Payments    int64 `json:"payments"`
	Deliveries  int64 `json:"deliveries"`
	Processed   int64 `json:"processed"`
	Duplicates  int64 `json:"duplicates"`
	Lost        int64 `json:"lost"`
	Unprocessed int64 `json:"unprocessed"`
	Overdrafts  int64 `json:"overdrafts"`
	LostUpdates int64 `json:"lost_updates"`
	Overlaps    int64 `json:"overlaps"`
	// OverlapNs and OverlapMaxNs are the window of exposure: the total and
	// the longest time two holders were inside one key's critical section
	// at once, as the store saw it.
	OverlapNs     int64 `json:"overlap_ns"`
	OverlapMaxNs  int64 `json:"overlap_max_ns"`
	StaleRejected int64 `json:"stale_rejected"`
	StaleAccepted int64 `json:"stale_accepted"`
	// TokenReused counts writes whose token was no newer than the last
	// applied write's to the key (a token handed out twice, as a fencing
	// counter does after a failover lost its increments): refused by
	// --fencing strict, applied otherwise.
	TokenReused int64 `json:"token_reused"`
	// TokenRegressed counts writes by holders nobody superseded whose
	// token was older than the newest the key had seen (a fencing counter
	// that restarted and handed out smaller tokens): refused by --fencing,
	// at a cost in availability, applied without it. Not unsafe: staleness
	// is judged by the order holders entered in (stale_accepted).
	TokenRegressed int64 `json:"token_regressed"`
	NotAcquired    int64 `json:"not_acquired"`
	// Conflicts counts the failed version checks of an optimistic
	// strategy (pg-optimistic), each tried again: the work a hot account
	// throws away. 0 for every other strategy.
	Conflicts int64 `json:"conflicts"`

	// Availability is Processed ÷ Payments (1 when no payment was offered).
	Availability float64 `json:"availability"`

	Errors map[string]int64 `json:"errors"`

	OpsPerSec float64 `json:"ops_per_sec"`
	// PaymentsPerSec is the rate of processed payments: those offered in
	// the measured span, per second, times the share processed. Offered
	// payments that no delivery processed never make a run look fast.
	PaymentsPerSec float64 `json:"payments_per_sec"`

	// Latency holds one entry per phase name (PhaseNames).
	Latency map[string]Latency `json:"latency"`
	// LatencyByOutcome splits acquire latency by what the delivery met:
	// OutcomeFirstTry (the lock was free at once), OutcomeWaited (it retried,
	// or a blocking strategy waited for a predecessor) and OutcomeGaveUp.
	LatencyByOutcome map[string]Latency `json:"latency_by_outcome,omitempty"`
	// Strikes counts the fault's strikes, UnsafeStrikes those whose window
	// saw an unsafe outcome.
	Strikes       int64 `json:"strikes"`
	UnsafeStrikes int64 `json:"unsafe_strikes"`
	// StrikesMissed counts the designed strikes that missed: while the
	// lock was forgotten and its holder kept inside, the caught payment's
	// other delivery neither got an answer from the lock nor waited on it
	// for loadgen.AskSpan. A run whose every strike missed is unknown.
	StrikesMissed int64 `json:"strikes_missed"`
	// Redeliveries counts messages the broker delivered again (queue).
	// It is 0 for every strategy that takes no messages.
	Redeliveries int64 `json:"redeliveries"`

	// DurationNs is the measured (post-warmup) wall time of the run.
	DurationNs int64 `json:"duration_ns"`
	// StartUnixNs is the wall-clock time the measured run started, in
	// nanoseconds since the Unix epoch; 0 when unknown. Interval logs
	// (*.hlog) use it as their StartTime so HistogramLogAnalyzer shows
	// real dates; interval times stay relative to it.
	StartUnixNs int64 `json:"start_unix_ns,omitempty"`
	// BehindNs is how far the open-loop generator fell behind its schedule
	// at worst (max over payments of actual start − intended start); 0 in a
	// closed loop.
	BehindNs int64 `json:"behind_ns"`
	// Params are the whole scenario, so a chart can plot against its
	// knobs and `lockbench run --from DIR --row N` can run the row again.
	Params Params `json:"params"`
	// FaultWindow is when the fault was active, relative to the start of the
	// measured run; nil when no fault ran.
	FaultWindow *Window `json:"fault_window,omitempty"`
	// FaultEvents is the fault's timeline ("paused pid 123", "node 2
	// killed"), relative to the start of the measured run.
	FaultEvents []Event `json:"fault_events,omitempty"`
	// Interrupted is true when the run was cut short (Ctrl-C) and the
	// figures cover only what ran.
	Interrupted bool `json:"interrupted,omitempty"`
}

// Params are the whole scenario of a run (loadgen.Scenario) and its fault,
// in file units: enough to run it again. A field's scenario tag names the
// Scenario field it records, by its YAML key (loadgen.Scenario.Params
// copies them over by it). The fields after Seed were added with trials;
// a file written before them reads them as zero.
type Params struct {
	Instances      int     `json:"instances" scenario:"instances"`
	Workers        int     `json:"workers" scenario:"workers"`
	DeliveriesEach int     `json:"deliveries_each" scenario:"deliveries"`
	Accounts       int     `json:"accounts" scenario:"accounts"`
	AccountDist    string  `json:"account_dist" scenario:"account_dist"`
	LockKey        string  `json:"lock_key" scenario:"lock_key"`
	Rate           float64 `json:"rate" scenario:"rate"`
	Hold           string  `json:"hold" scenario:"hold"`
	TTLNs          int64   `json:"ttl_ns" scenario:"ttl"`
	Store          string  `json:"store" scenario:"store"`
	InstanceMode   string  `json:"instance_mode" scenario:"instance_mode"`
	// Seed is this trial's seed: the command's --seed plus Trial − 1.
	Seed int64 `json:"seed" scenario:"seed"`

	Payments         int     `json:"payments" scenario:"payments"`
	DurationNs       int64   `json:"duration_ns" scenario:"duration"`
	WarmupNs         int64   `json:"warmup_ns" scenario:"warmup"`
	Funding          float64 `json:"funding,omitempty" scenario:"funding"`
	AcquireTimeoutNs int64   `json:"acquire_timeout_ns,omitempty" scenario:"acquire_timeout"`
	Retry            string  `json:"retry,omitempty" scenario:"retry"`
	// Fencing is what the scenario asked of the store (--fencing); the
	// summary's own Fencing is whether the store checked this strategy's
	// tokens, false for a strategy without any.
	Fencing bool `json:"fencing" scenario:"fencing"`
	// FencingStrict is --fencing strict: the store also refused a write
	// whose token was not newer than the last one it accepted.
	FencingStrict bool `json:"fencing_strict,omitempty" scenario:"fencing_strict"`
	// IntervalNs is the length of the run's latency intervals (its
	// interval logs' resolution); 0 in files written before it was
	// recorded, which used 1 s.
	IntervalNs int64 `json:"interval_ns,omitempty" scenario:"interval"`
	// Fault is the whole --fault value the run had ("kill-node:down=1500ms").
	Fault string `json:"fault,omitempty"`
	// StoreTransport is how the instance processes reached the store:
	// "sync" (each Enter and Finish a round trip) or "sequenced" (one-way
	// events applied in sequence order; --store-transport, which falls
	// back to sync where it cannot apply). "" for in-process instances,
	// and in files written before it was recorded (their processes were
	// sync).
	StoreTransport string `json:"store_transport,omitempty"`
}

// Contenders is how many workers compete for one lock key on average: every
// worker of every instance, spread over the keys. It is the x axis of the
// throughput-against-contention chart.
func (p Params) Contenders() float64 {
	keys := p.Accounts
	if keys <= 0 {
		keys = 1
	}
	c := float64(p.Instances*p.Workers) / float64(keys)
	if c < 1 {
		return 1
	}
	return c
}

// The acquire outcomes of LatencyByOutcome.
const (
	OutcomeFirstTry = "first_try"
	OutcomeWaited   = "waited"
	OutcomeGaveUp   = "gave_up"
)

// Window is a span of time relative to the start of the measured run.
type Window struct {
	StartNs int64 `json:"start_ns"`
	EndNs   int64 `json:"end_ns"`
}

// Latency is one phase's latency distribution in nanoseconds.
type Latency struct {
	P50   int64   `json:"p50"`
	P90   int64   `json:"p90"`
	P99   int64   `json:"p99"`
	P999  int64   `json:"p999"`
	Max   int64   `json:"max"`
	Mean  float64 `json:"mean"`
	Count int64   `json:"count"`
}

// UnsafeCount is the number that decides safety: duplicates + lost +
// overdrafts + lost updates + stale writes accepted.
func (s *Summary) UnsafeCount() int64 {
	return s.Duplicates + s.Lost + s.Overdrafts + s.LostUpdates + s.StaleAccepted
}

// BrokeAtStart begins Summary.Unjudged of a run whose strategy's adapter
// was lost before the first payment was offered.
const BrokeAtStart = "the strategy broke before its first payment"

// The verdicts of a run (Summary.Verdict).
const (
	VerdictSafe    = "safe"
	VerdictUnsafe  = "unsafe"
	VerdictUnknown = "unknown"
)

// MinAnswered is the least share of a run's payments that must get an
// answer from the lock for it to be judged safe: 10%.
const MinAnswered = 0.10

// Answered is how many answers the lock gave the run's deliveries:
// payments processed, deliveries refused (not_acquired) and writes
// refused as stale. Errors, adapter_lost among them, are no answer.
func (s *Summary) Answered() int64 { return s.Processed + s.NotAcquired + s.StaleRejected }

// Finish derives Verdict, Unsafe and Availability from the counters. A run
// with an unsafe outcome is unsafe, whatever else happened. Otherwise it
// is unknown when it cannot show the lock safe: no payment was offered,
// or fewer than MinAnswered of the payments offered got an answer from
// the lock (Answered, against Payments); else safe.
func (s *Summary) Finish() {
	prior := s.Unjudged
	s.Unsafe = s.UnsafeCount() > 0
	if s.Payments > 0 {
		s.Availability = float64(s.Processed) / float64(s.Payments)
	} else {
		s.Availability = 1
	}
	s.Verdict, s.Unjudged = VerdictSafe, ""
	switch answered := s.Answered(); {
	case s.Unsafe:
		s.Verdict = VerdictUnsafe
	case s.Payments == 0 && s.Errors["adapter_lost"] > 0:
		// Lost at New's probe: the lock never worked (loadgen's brokeAtStart).
		s.Verdict, s.Availability, s.Unjudged = VerdictUnknown, 0, BrokeAtStart
		if strings.HasPrefix(prior, BrokeAtStart) {
			s.Unjudged = prior // with its cause
		}
	case s.Payments == 0:
		s.Verdict, s.Unjudged = VerdictUnknown, "no payment was offered"
	case float64(answered) < MinAnswered*float64(s.Payments):
		s.Verdict = VerdictUnknown
		s.Unjudged = fmt.Sprintf("no answer from the lock: %d answers (processed, not acquired, stale refused) for %d payments, under %.0f%%%s",
			answered, s.Payments, 100*MinAnswered, errorList(s.Errors))
	case s.Fault != "" && s.Fault != "none" && s.Strikes == 0:
		s.Verdict, s.Unjudged = VerdictUnknown, fmt.Sprintf("the fault %s never struck", s.Fault)
	case s.Strikes > 0 && s.StrikesMissed >= s.Strikes:
		s.Verdict = VerdictUnknown
		s.Unjudged = fmt.Sprintf("every designed strike missed (%d of %d): none got as far as a second holder (the caught payment's other delivery did not ask for the lock while it was forgotten, or the run ended before the failover promoted a replica); the fault's events say how far each got", s.StrikesMissed, s.Strikes)
	}
}

// errorList is "; errors: adapter_lost 600, timeout 3", or "" for none.
func errorList(errs map[string]int64) string {
	var parts []string
	for _, k := range sortedKeys(errs) {
		if errs[k] > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", k, errs[k]))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "; errors: " + strings.Join(parts, ", ")
}

func sortedKeys(m map[string]int64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Unknown reports whether the run could not be judged.
func (s *Summary) Unknown() bool { return s.Verdict == VerdictUnknown && !IsUnsafe(s) }

// ID is a file-name-safe identifier of the run: strategy, scenario, fault,
// variant when there is one, fencing, and the trial from the second on,
// e.g. "etcd.base.pause.fenced", "mutex.verdicts.none.instances=1.unfenced"
// or "setnx.verdicts.pause.unfenced.trial3". The first trial has no
// suffix, so directories written before trials keep their file names.
func (s *Summary) ID() string {
	fence := "unfenced"
	if s.Fencing {
		fence = "fenced"
	}
	parts := []string{s.Strategy, s.Scenario, s.Fault}
	if s.Variant != "" {
		parts = append(parts, s.Variant)
	}
	parts = append(parts, fence)
	if s.Trial > 1 {
		parts = append(parts, "trial"+strconv.Itoa(s.Trial))
	}
	for i, p := range parts {
		parts[i] = Sanitize(p)
	}
	return strings.Join(parts, ".")
}

func Sanitize(s string) string {
	if s == "" {
		return "none"
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
			b.WriteRune(r)
		default:
			b.WriteRune('_')
		}
	}
	return b.String()
}

// Label is the verdict for tables: "SAFE", "UNSAFE" or "UNKNOWN".
func (s *Summary) Label() string {
	switch {
	case IsUnsafe(s):
		return "UNSAFE"
	case s.Unknown():
		return "UNKNOWN"
	}
	return "SAFE"
}

// String is a short description for logs.
func (s *Summary) String() string {
	return fmt.Sprintf("%s/%s/%s fencing=%v %s", s.Strategy, s.Scenario, s.Fault, s.Fencing, s.Label())
}
