package results

import (
	"strings"
	"testing"
)

// TestFinishVerdict: Finish's rule for the verdict, one case a branch: an
// unsafe run is unsafe whatever else happened; a run that got too few
// answers, offered nothing, broke before its first payment or had every
// designed strike miss is unknown, never safe.
func TestFinishVerdict(t *testing.T) {
	broke := BrokeAtStart + ": adapter printed a line"
	cases := []struct {
		name    string
		s       Summary
		verdict string
		why     string // a prefix of Unjudged
		avail   float64
	}{
		{"safe", Summary{Payments: 100, Processed: 100}, VerdictSafe, "", 1},
		{"unsafe beats no answer", Summary{Payments: 100, Processed: 2, Duplicates: 1}, VerdictUnsafe, "", 0.02},
		{"refused is an answer", Summary{Payments: 100, Processed: 30, NotAcquired: 70}, VerdictSafe, "", 0.3},
		{"no answer", Summary{Payments: 100, Processed: 5, Errors: map[string]int64{"adapter_lost": 95}}, VerdictUnknown, "no answer from the lock", 0.05},
		{"nothing offered", Summary{}, VerdictUnknown, "no payment was offered", 1},
		{"broke at start, with its cause", Summary{Errors: map[string]int64{"adapter_lost": 1}, Unjudged: broke}, VerdictUnknown, broke, 0},
		{"broke at start, read back without it", Summary{Errors: map[string]int64{"adapter_lost": 1}}, VerdictUnknown, BrokeAtStart, 0},
		{"never struck", Summary{Payments: 100, Processed: 100, Fault: "pause"}, VerdictUnknown, "the fault pause never struck", 1},
		{"every strike missed", Summary{Payments: 100, Processed: 100, Fault: "pause", Strikes: 2, StrikesMissed: 2}, VerdictUnknown, "every designed strike missed", 1},
		{"one strike landed", Summary{Payments: 100, Processed: 100, Fault: "pause", Strikes: 2, StrikesMissed: 1}, VerdictSafe, "", 1},
	}
	for _, c := range cases {
		s := c.s
		s.Finish()
		if s.Verdict != c.verdict || !strings.HasPrefix(s.Unjudged, c.why) || (c.why == "") != (s.Unjudged == "") || s.Availability != c.avail {
			t.Errorf("%s: verdict %q, unjudged %q, availability %v; want %q, %q…, %v", c.name, s.Verdict, s.Unjudged, s.Availability, c.verdict, c.why, c.avail)
		}
		if s.Unsafe != (c.verdict == VerdictUnsafe) {
			t.Errorf("%s: unsafe %v with verdict %q", c.name, s.Unsafe, s.Verdict)
		}
	}
}
