package faults

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/lockbench/lockbench/internal/usage"
)

// DefaultAt is the share of the run's payments offered before a fault
// strikes, when its at= parameter is not given: 0.3.
const DefaultAt = 0.3

// MaxDuration bounds every duration a fault takes (for=, down=, every=,
// hold=, …): 1 hour. A fault is a moment of a run, and a run that waited
// longer for one is a typo, not a benchmark.
const MaxDuration = time.Hour

// params reads one fault's key=value parameters, remembering which keys were
// read so that a misspelt one is reported instead of silently ignored.
type params struct {
	fault string
	p     map[string]string
	known []string
	err   error
}

func newParams(fault string, p map[string]string) *params {
	return &params{fault: fault, p: p}
}

// fail records the first bad parameter as a usage error on --fault.
func (ps *params) fail(key, want string) {
	if ps.err == nil {
		ps.err = &usage.Error{Flag: "fault", Msg: fmt.Sprintf("%s: bad %s=%q; want %s", ps.fault, key, ps.p[key], want)}
	}
}

func (ps *params) lookup(key string) (string, bool) {
	ps.known = append(ps.known, key)
	v, ok := ps.p[key]
	return v, ok
}

// duration reads key as a duration > 0; def (0 meaning "derived at Setup")
// when absent.
func (ps *params) duration(key string, def time.Duration) time.Duration {
	v, ok := ps.lookup(key)
	if !ok {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 || d > MaxDuration {
		ps.fail(key, "a duration in (0, 1h] such as 500ms or 3s")
		return def
	}
	return d
}

// index reads key as an integer ≥ 0; def (-1 meaning "derived at Setup")
// when absent.
func (ps *params) index(key string, def int) int {
	v, ok := ps.lookup(key)
	if !ok {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		ps.fail(key, "an integer ≥ 0")
		return def
	}
	return n
}

// share reads key as a number in [0, 1).
func (ps *params) share(key string, def float64) float64 {
	v, ok := ps.lookup(key)
	if !ok {
		return def
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || !(f >= 0 && f < 1) { // refuses NaN too
		ps.fail(key, "a share of the payments in [0, 1), such as 0.3")
		return def
	}
	return f
}

// choice reads key as one of options; the first is the default.
func (ps *params) choice(key string, options ...string) string {
	v, ok := ps.lookup(key)
	if !ok {
		return options[0]
	}
	for _, o := range options {
		if v == o {
			return v
		}
	}
	ps.fail(key, "one of "+strings.Join(options, ", "))
	return options[0]
}

// onOff reads key as on or off.
func (ps *params) onOff(key string, def bool) bool {
	d := "off"
	if def {
		d = "on"
	}
	v, ok := ps.lookup(key)
	if !ok {
		return def
	}
	switch v {
	case "on":
		return true
	case "off":
		return false
	}
	ps.fail(key, "on or off (default "+d+")")
	return def
}

// done returns the first bad parameter, or names a key nobody read.
func (ps *params) done() error {
	if ps.err != nil {
		return ps.err
	}
	var unknown []string
	for k := range ps.p {
		if !contains(ps.known, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		accepted := "none"
		if len(ps.known) > 0 {
			accepted = strings.Join(ps.known, ", ")
		}
		return &usage.Error{Flag: "fault", Msg: fmt.Sprintf("%s: unknown parameter %q (accepted: %s)", ps.fault, unknown[0], accepted)}
	}
	return nil
}

// span is a duration parameter that takes one duration D or a range
// MIN-MAX, drawn anew for each strike (draws.of). The zero span means
// "derived at Setup".
type span struct{ lo, hi time.Duration }

// fixed is the span of one duration.
func fixed(d time.Duration) span { return span{d, d} }

// isZero reports whether the span was left to be derived at Setup.
func (s span) isZero() bool { return s.hi == 0 }

// String is the span as its parameter is written.
func (s span) String() string {
	if s.lo == s.hi {
		return s.lo.String()
	}
	return s.lo.String() + "-" + s.hi.String()
}

// span reads key as a duration > 0 or a range MIN-MAX of them with MIN ≤
// MAX; def when absent.
func (ps *params) span(key string, def span) span {
	v, ok := ps.lookup(key)
	if !ok {
		return def
	}
	lo, hi, isRange := strings.Cut(v, "-")
	if !isRange {
		hi = lo
	}
	a, errA := time.ParseDuration(lo)
	b, errB := time.ParseDuration(hi)
	if errA != nil || errB != nil || a <= 0 || b < a || b > MaxDuration {
		ps.fail(key, "a duration in (0, 1h] such as 500ms, or a range MIN-MAX with 0 < MIN ≤ MAX ≤ 1h such as 300ms-800ms")
		return def
	}
	return span{a, b}
}
