package results

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Human units for screens and report.md; files keep nanoseconds.

// FormatDuration formats ns for people, with three significant digits in
// the largest unit that keeps it ≥ 1: "850ns", "12.3µs", "4.56ms", "1.20s";
// 0 is "0". It is lockbench's one duration formatter for screens, reports
// and fault events; files keep nanoseconds.
func FormatDuration(ns int64) string {
	if ns < 0 {
		return "-" + FormatDuration(-max(ns, -math.MaxInt64))
	}
	v := float64(ns)
	switch {
	case ns == 0:
		return "0"
	case ns < 1e3:
		return strconv.FormatInt(ns, 10) + "ns"
	case ns < 1e6:
		return sig3(v/1e3) + "µs"
	case ns < 1e9:
		return sig3(v/1e6) + "ms"
	default:
		return sig3(v/1e9) + "s"
	}
}

// sig3 formats v (≥ 0) with three significant digits.
func sig3(v float64) string {
	switch {
	case v >= 99.95:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case v >= 9.995:
		return strconv.FormatFloat(v, 'f', 1, 64)
	default:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
}

// fmtRate formats a per-second rate: whole numbers from 100 up, else one
// or two decimals.
func fmtRate(v float64) string {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return "-"
	case v >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case v >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	default:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
}

// fmtPercent formats a fraction as a percentage, rounded down to two
// decimals so 0.99999 reads "99.99%", not a reassuring "100%".
func fmtPercent(f float64) string {
	p := math.Floor(f*10000+1e-9) / 100
	return strconv.FormatFloat(p, 'f', -1, 64) + "%"
}

// knownErrorClasses come first, in this order, wherever errors are listed.
var knownErrorClasses = []string{"timeout", "refused", "other"}

// errorClasses returns the classes in m: the known ones first, then the
// rest sorted.
func errorClasses(ms ...map[string]int64) []string {
	seen := map[string]bool{}
	var extra []string
	for _, m := range ms {
		for k := range m {
			if !seen[k] {
				seen[k] = true
				extra = append(extra, k)
			}
		}
	}
	var out []string
	for _, k := range knownErrorClasses {
		if seen[k] {
			out = append(out, k)
		}
	}
	sort.Strings(extra)
	for _, k := range extra {
		if !isKnownErrorClass(k) {
			out = append(out, k)
		}
	}
	return out
}

func isKnownErrorClass(k string) bool {
	for _, c := range knownErrorClasses {
		if c == k {
			return true
		}
	}
	return false
}

// fmtErrors lists the non-zero error counts, "timeout=3 other=1", or "0".
func fmtErrors(m map[string]int64) string {
	var parts []string
	for _, k := range errorClasses(m) {
		if m[k] != 0 {
			parts = append(parts, fmt.Sprintf("%s=%d", k, m[k]))
		}
	}
	if len(parts) == 0 {
		return "0"
	}
	return strings.Join(parts, " ")
}

// fmtFencing is how the fencing flag is spelt on the command line.
func fmtFencing(on bool) string {
	if on {
		return "on"
	}
	return "off"
}

func sortedKeysOf(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
