package results

import (
	"io"
	"sort"
	"strconv"
)

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

// isUnsafe is the verdict of s, trusting the counters even when Finish
// was not called.
func isUnsafe(s *Summary) bool { return s.Unsafe || s.UnsafeCount() > 0 }

func verdictOf(s *Summary) string {
	if isUnsafe(s) {
		return "UNSAFE"
	}
	return "SAFE"
}

// sortVerdicts orders ss by fault (FaultOrder), then strategy
// (strategies.Rank), unfenced before fenced; ties keep their order.
func sortVerdicts(ss []Summary) []Summary {
	out := append([]Summary(nil), ss...)
	sort.SliceStable(out, func(i, j int) bool {
		a, b := &out[i], &out[j]
		if fa, fb := faultRank(a.Fault), faultRank(b.Fault); fa != fb {
			return fa < fb
		}
		if a.Fault != b.Fault {
			return a.Fault < b.Fault
		}
		return keyOf(a).less(keyOf(b))
	})
	return out
}

// VerdictTable writes the verdict table of ss in Markdown (padded, so it
// reads in a terminal too): one row per strategy × fault × fencing, sorted
// by fault then strategy, with the verdict, the counts that decide it
// (duplicates, lost, overdrafts, lost updates, stale accepted), and for
// context overlaps, stale writes rejected and availability. It is what
// `lockbench verdicts` prints and what report.md shows.
func VerdictTable(w io.Writer, ss []Summary) error {
	header := []string{"strategy", "fault", "fencing", "verdict", "duplicates", "lost", "overdrafts",
		"lost updates", "stale accepted", "overlaps", "stale rejected", "availability"}
	right := []bool{false, false, false, false, true, true, true, true, true, true, true, true}
	var rows [][]string
	for _, s := range sortVerdicts(ss) {
		fault := s.Fault
		if fault == "" {
			fault = FaultNone
		}
		verdict := verdictOf(&s)
		if isUnsafe(&s) {
			verdict = "**UNSAFE**"
		}
		rows = append(rows, []string{
			keyOf(&s).name(), fault, fmtFencing(s.Fencing), verdict,
			i64(s.Duplicates), i64(s.Lost), i64(s.Overdrafts), i64(s.LostUpdates), i64(s.StaleAccepted),
			i64(s.Overlaps), i64(s.StaleRejected), fmtPercent(s.Availability),
		})
	}
	return mdTable(w, header, right, rows)
}

// unsafeLabel is the text of a safety-grid cell.
func unsafeLabel(s *Summary) string {
	switch n := s.UnsafeCount(); {
	case !isUnsafe(s):
		return "safe"
	case n == 0:
		return "unsafe"
	default:
		return strconv.FormatInt(n, 10)
	}
}
