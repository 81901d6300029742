package loadgen

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/lockbench/lockbench/strategies"
)

// Hold is the distribution of the work done inside the critical section
// (`--hold`): a fixed duration ("2ms"), uniform ("uniform:1ms-5ms") or
// exponential with a mean ("exp:2ms").
type Hold struct {
	kind     string // "fixed", "uniform", "exp"
	min, max time.Duration
	mean     time.Duration
	text     string
}

// ParseHold parses a --hold value.
func ParseHold(s string) (Hold, error) {
	bad := fmt.Errorf("want a duration (2ms), uniform:MIN-MAX or exp:MEAN, got %q", s)
	kind, rest, hasKind := strings.Cut(s, ":")
	switch {
	case !hasKind:
		d, err := time.ParseDuration(s)
		if err != nil || d < 0 {
			return Hold{}, bad
		}
		return Hold{kind: "fixed", min: d, max: d, mean: d, text: s}, nil
	case kind == "uniform":
		lo, hi, ok := strings.Cut(rest, "-")
		a, err1 := time.ParseDuration(lo)
		b, err2 := time.ParseDuration(hi)
		if !ok || err1 != nil || err2 != nil || a < 0 || b < a {
			return Hold{}, bad
		}
		return Hold{kind: "uniform", min: a, max: b, mean: (a + b) / 2, text: s}, nil
	case kind == "exp":
		m, err := time.ParseDuration(rest)
		if err != nil || m <= 0 {
			return Hold{}, bad
		}
		return Hold{kind: "exp", mean: m, max: time.Duration(math.MaxInt64), text: s}, nil
	}
	return Hold{}, bad
}

// String returns the text the Hold was parsed from.
func (h Hold) String() string { return h.text }

// Mean is the distribution's mean.
func (h Hold) Mean() time.Duration { return h.mean }

// Max is the largest value the distribution yields (math.MaxInt64 for exp).
func (h Hold) Max() time.Duration { return h.max }

// Sample draws one hold time.
func (h Hold) Sample(r *rand.Rand) time.Duration {
	switch h.kind {
	case "uniform":
		if h.max == h.min {
			return h.min
		}
		return h.min + time.Duration(r.Int64N(int64(h.max-h.min)+1))
	case "exp":
		return time.Duration(r.ExpFloat64() * float64(h.mean))
	}
	return h.min
}

// MarshalText and UnmarshalText let a Hold sit in a YAML scenario file.
func (h Hold) MarshalText() ([]byte, error) { return []byte(h.text), nil }

// UnmarshalText parses a Hold.
func (h *Hold) UnmarshalText(b []byte) error {
	v, err := ParseHold(string(b))
	if err != nil {
		return err
	}
	*h = v
	return nil
}

// AccountDist picks the account of each payment (`--account-dist`):
// "uniform", "zipf:S" (S > 1, skew) or "hot:F" (a fraction F of payments
// go to account 0, the rest uniformly).
type AccountDist struct {
	kind string
	s    float64
	text string
}

// ParseAccountDist parses an --account-dist value.
func ParseAccountDist(s string) (AccountDist, error) {
	bad := fmt.Errorf("want uniform, zipf:S (S > 1) or hot:F (0 < F ≤ 1), got %q", s)
	kind, rest, _ := strings.Cut(s, ":")
	switch kind {
	case "uniform":
		if rest != "" {
			return AccountDist{}, bad
		}
		return AccountDist{kind: kind, text: s}, nil
	case "zipf", "hot":
		v, err := strconv.ParseFloat(rest, 64)
		if err != nil || (kind == "zipf" && v <= 1) || (kind == "hot" && (v <= 0 || v > 1)) {
			return AccountDist{}, bad
		}
		return AccountDist{kind: kind, s: v, text: s}, nil
	}
	return AccountDist{}, bad
}

// String returns the text the distribution was parsed from.
func (d AccountDist) String() string { return d.text }

// MarshalText and UnmarshalText let an AccountDist sit in a YAML file.
func (d AccountDist) MarshalText() ([]byte, error) { return []byte(d.text), nil }

// UnmarshalText parses an AccountDist.
func (d *AccountDist) UnmarshalText(b []byte) error {
	v, err := ParseAccountDist(string(b))
	if err != nil {
		return err
	}
	*d = v
	return nil
}

// picker returns a function drawing accounts in [0, n) from r.
func (d AccountDist) picker(r *rand.Rand, n int) func() int {
	if n <= 1 {
		return func() int { return 0 }
	}
	switch d.kind {
	case "zipf":
		z := rand.NewZipf(r, d.s, 1, uint64(n-1))
		return func() int { return int(z.Uint64()) }
	case "hot":
		return func() int {
			if r.Float64() < d.s {
				return 0
			}
			return r.IntN(n)
		}
	}
	return func() int { return r.IntN(n) }
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
