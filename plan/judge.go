package plan

import (
	"fmt"
	"strings"
	"time"

	"github.com/lockbench/lockbench/results"
)

// DefaultSLOP99 is the p99 total latency a sustainable rate must stay
// under, unless the caller chooses another: 20ms.
const DefaultSLOP99 = 20 * time.Millisecond

// MaxBehind is how far the achieved rate may fall behind the offered rate
// of a sustainable step: 5%.
const MaxBehind = 0.05

// Sustainable reports whether a run at an offered rate (payments/s)
// sustained it: p99 total latency within slo (measured: with at least
// results.MinTailSamples deliveries beyond it), no errors, no payment
// given up on, and an achieved rate at least 1-MaxBehind (95%) of the
// offered one. Safety is not a capacity criterion; it is reported beside
// it.
func Sustainable(s *results.Summary, rate float64, slo time.Duration) bool {
	return judge(s, rate, slo).OK
}

// judge is Sustainable with the step's numbers and the reasons it failed.
func judge(s *results.Summary, rate float64, slo time.Duration) Step {
	total, acquire := s.Latency["total"], s.Latency["acquire"]
	stat := func(l results.Latency, name string) int64 { v, _ := l.Value(name); return v }
	st := Step{
		Rate:         rate,
		Achieved:     s.PaymentsPerSec,
		TotalP99Ns:   stat(total, results.StatP99),
		AcquireP50Ns: stat(acquire, results.StatP50),
		AcquireP99Ns: stat(acquire, results.StatP99),
		Unprocessed:  s.Unprocessed,
		Unsafe:       s.UnsafeCount(),
	}
	for _, n := range s.Errors {
		st.Errors += n
	}
	var why []string
	switch {
	case !total.Has(results.StatP99):
		// A p99 with fewer than 10 samples beyond it is no measurement:
		// the step cannot show it held.
		why = append(why, fmt.Sprintf("too few deliveries for a p99 (%d < %d)", total.Count, results.MinCount(results.StatP99)))
	case st.TotalP99Ns > int64(slo):
		why = append(why, fmt.Sprintf("p99 %s > %s", results.FormatDuration(st.TotalP99Ns), results.FormatDuration(int64(slo))))
	}
	if st.Errors > 0 {
		why = append(why, fmt.Sprintf("%d errors", st.Errors))
	}
	if st.Unprocessed > 0 {
		why = append(why, fmt.Sprintf("%d payments given up", st.Unprocessed))
	}
	if st.Achieved < rate*(1-MaxBehind) {
		why = append(why, fmt.Sprintf("achieved %.0f/s < %.0f%% of offered", st.Achieved, 100*(1-MaxBehind)))
	}
	st.OK = len(why) == 0
	st.Reason = strings.Join(why, ", ")
	return st
}
