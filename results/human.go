package results

import (
	"math"
	"sort"
	"strconv"
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

// knownErrorClasses come first, in this order, wherever errors are listed.
var knownErrorClasses = []string{"timeout", "refused", "other"}

// ErrorClasses returns the classes in m: the known ones first, then the
// rest sorted.
func ErrorClasses(ms ...map[string]int64) []string {
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
