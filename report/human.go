package report

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/lockbench/lockbench/results"
)

// Human units for screens, report.md and report.html; files keep
// nanoseconds (results.FormatDuration formats a duration).

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

// fmtErrors lists the non-zero error counts, "timeout=3 other=1", or "0".
func fmtErrors(m map[string]int64) string {
	var parts []string
	for _, k := range results.ErrorClasses(m) {
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

// fmtStat formats the statistic stat of l for people: a duration, or "—"
// when it is not reported (the report says what the dash means).
func fmtStat(l results.Latency, stat string) string {
	v, ok := l.Value(stat)
	if !ok {
		return results.Dash
	}
	return results.FormatDuration(v)
}

// i64 formats a count.
func i64(v int64) string { return strconv.FormatInt(v, 10) }

// roundF rounds a non-negative v to the nearest integer.
func roundF(v float64) int64 { return int64(v + 0.5) }
