package results

// VerdictRuns returns the runs behind the verdict table and verdicts.json
// (verdicts.json in a run directory): every run of each scenario in which a fault was injected,
// including that scenario's fault-free runs (the baseline column). It
// returns nil when no fault ran.
func VerdictRuns(ss []Summary) []Summary {
	faulted := map[string]bool{}
	for i := range ss {
		if ss[i].HasFault() {
			faulted[ss[i].Scenario] = true
		}
	}
	var out []Summary
	for _, s := range ss {
		if faulted[s.Scenario] {
			out = append(out, s)
		}
	}
	return out
}

// IsUnsafe is the verdict of s, trusting the counters even when Finish
// was not called.
func IsUnsafe(s *Summary) bool { return s.Unsafe || s.UnsafeCount() > 0 }
