package plan

import (
	"strings"
	"testing"
	"time"

	"github.com/lockbench/lockbench/results"
)

// summaryAt is a synthetic step result: achieved payments/s, p99 total
// latency and error count.
func summaryAt(achieved float64, p99 time.Duration, errs int64) results.Summary {
	s := results.Summary{
		PaymentsPerSec: achieved,
		Latency: map[string]results.Latency{
			"total":   {P99: int64(p99), Count: 2000},
			"acquire": {P50: int64(p99 / 10), P99: int64(p99 / 2), Count: 2000},
		},
		Errors: map[string]int64{},
	}
	if errs > 0 {
		s.Errors["timeout"] = errs
	}
	return s
}

func TestJudge(t *testing.T) {
	const slo = 20 * time.Millisecond
	unprocessed := summaryAt(1000, time.Millisecond, 0)
	unprocessed.Unprocessed = 2
	fewSamples := summaryAt(1000, time.Millisecond, 0)
	fewSamples.Latency["total"] = results.Latency{P99: int64(time.Millisecond), Count: 999}
	cases := []struct {
		name   string
		s      results.Summary
		rate   float64
		ok     bool
		reason string // a substring of the reason; "" when ok
	}{
		// Everything within bounds holds.
		{"holds", summaryAt(1000, 5*time.Millisecond, 0), 1000, true, ""},
		// p99 exactly at the SLO still holds; one nanosecond over fails.
		{"p99 at slo", summaryAt(1000, slo, 0), 1000, true, ""},
		{"p99 over slo", summaryAt(1000, slo+1, 0), 1000, false, "p99 20.0ms > 20.0ms"},
		// Any error fails the rate.
		{"errors", summaryAt(1000, time.Millisecond, 3), 1000, false, "3 errors"},
		// A payment that no delivery managed to apply fails the rate.
		{"unprocessed", unprocessed, 1000, false, "2 payments given up"},
		// Exactly 5% behind holds; more fails.
		{"5% behind", summaryAt(950, time.Millisecond, 0), 1000, true, ""},
		{"6% behind", summaryAt(940, time.Millisecond, 0), 1000, false, "achieved 940/s"},
		// Several reasons are all named.
		{"all at once", summaryAt(100, time.Second, 1), 1000, false, "p99 1.00s > 20.0ms, 1 errors, achieved 100/s"},
		// A p99 with fewer than 10 deliveries beyond it proves nothing:
		// the step fails for want of samples, whatever the number says.
		{"too few samples", fewSamples, 1000, false, "too few deliveries for a p99 (999 < 1000)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := judge(&tc.s, tc.rate, slo)
			if got.OK != tc.ok {
				t.Errorf("ok = %v (reason %q); want %v", got.OK, got.Reason, tc.ok)
			}
			if !strings.Contains(got.Reason, tc.reason) || (tc.ok && got.Reason != "") {
				t.Errorf("reason = %q; want it to contain %q", got.Reason, tc.reason)
			}
			if s := Sustainable(&tc.s, tc.rate, slo); s != tc.ok {
				t.Errorf("Sustainable = %v; want %v, as the judge says", s, tc.ok)
			}
		})
	}
}
