package report

import (
	"fmt"
	"io"
	"sort"
	"strconv"

	"github.com/lockbench/lockbench/results"
)

func verdictOf(s *results.Summary) string { return s.Label() }

// verdictLess orders verdict rows by fault (FaultOrder), then strategy
// (Styles), unfenced before fenced.
func verdictLess(a, b *results.Summary) bool {
	if fa, fb := faultRank(a.Fault), faultRank(b.Fault); fa != fb {
		return fa < fb
	}
	if a.Fault != b.Fault {
		return a.Fault < b.Fault
	}
	return keyOf(a).less(keyOf(b))
}

// sortVerdicts orders ss by verdictLess; ties keep their order.
func sortVerdicts(ss []results.Summary) []results.Summary {
	out := append([]results.Summary(nil), ss...)
	sort.SliceStable(out, func(i, j int) bool { return verdictLess(&out[i], &out[j]) })
	return out
}

// VerdictTable writes the verdict table of ss in Markdown (padded, so it
// reads in a terminal too), as `lockbench verdicts` prints it and report.md
// shows it: one row per strategy × fault × fencing, sorted by fault then
// strategy (its columns are in the package doc). When a cell ran more than
// one trial it has one row per cell instead (verdictTrialsTable).
func VerdictTable(w io.Writer, ss []results.Summary) error {
	if results.MaxTrials(ss) > 1 {
		return verdictTrialsTable(w, ss)
	}
	header := []string{"strategy", "fault", "fencing", "verdict", "duplicates", "lost", "overdrafts",
		"lost updates", "stale accepted", "overlaps", "stale rejected", "availability"}
	right := []bool{false, false, false, false, true, true, true, true, true, true, true, true}
	exposure, strikes := anyExposure(ss), anyStrikes(ss)
	regressed := false
	for i := range ss {
		regressed = regressed || ss[i].TokenRegressed > 0
	}
	if regressed {
		header, right = append(header, "token regressed"), append(right, true)
	}
	if exposure {
		header, right = append(header, "exposure"), append(right, true)
	}
	if strikes {
		header, right = append(header, "unsafe strikes"), append(right, true)
	}
	var rows [][]string
	for _, s := range sortVerdicts(ss) {
		verdict := verdictOf(&s)
		if results.IsUnsafe(&s) {
			verdict = "**UNSAFE**"
		} else if s.Unknown() {
			verdict = "*UNKNOWN*"
		}
		row := []string{
			keyOf(&s).name(), faultName(&s), fmtFencing(s.Fencing), verdict,
			i64(s.Duplicates), i64(s.Lost), i64(s.Overdrafts), i64(s.LostUpdates), i64(s.StaleAccepted),
			i64(s.Overlaps), i64(s.StaleRejected), fmtPercent(s.Availability),
		}
		if regressed {
			row = append(row, i64(s.TokenRegressed))
		}
		if exposure {
			row = append(row, results.FormatDuration(s.OverlapMaxNs))
		}
		if strikes {
			row = append(row, i64(s.UnsafeStrikes)+"/"+i64(s.Strikes))
		}
		rows = append(rows, row)
	}
	return mdTable(w, header, right, rows)
}

// faultName is the run's fault, "none" for "".
func faultName(s *results.Summary) string {
	if s.Fault == "" {
		return results.FaultNone
	}
	return s.Fault
}

func anyExposure(ss []results.Summary) bool {
	for i := range ss {
		if ss[i].OverlapMaxNs > 0 {
			return true
		}
	}
	return false
}

func anyStrikes(ss []results.Summary) bool {
	for i := range ss {
		if ss[i].Strikes > 0 {
			return true
		}
	}
	return false
}

// verdictTrialsTable is the verdict table with one row per cell across
// its trials: the verdict (UNSAFE when any trial was), the unsafe trials
// as k/N with the rate's 95% Wilson interval, the median over trials of
// the counts, availability and (when measured) the longest overlap, and
// the unsafe strikes summed with their rate's interval.
func verdictTrialsTable(w io.Writer, ss []results.Summary) error {
	rows := cellRows(ss)
	sort.SliceStable(rows, func(i, j int) bool { return verdictLess(&rows[i].runs[0], &rows[j].runs[0]) })
	header := []string{"strategy", "fault", "fencing", "verdict", "unsafe trials", "duplicates", "lost updates",
		"stale accepted", "overlaps", "stale rejected", "availability"}
	right := []bool{false, false, false, false, true, true, true, true, true, true, true}
	exposure, strikes := anyExposure(ss), anyStrikes(ss)
	if exposure {
		header, right = append(header, "exposure"), append(right, true)
	}
	if strikes {
		header, right = append(header, "unsafe strikes"), append(right, true)
	}
	median := func(r *cellRow, f func(s *results.Summary) float64) string {
		vs := make([]float64, len(r.runs))
		for i := range r.runs {
			vs[i] = f(&r.runs[i])
		}
		return strconv.FormatFloat(results.EstimateOf(vs).Median, 'f', -1, 64)
	}
	var out [][]string
	for i := range rows {
		r := &rows[i]
		verdict := cellVerdict(&r.Cell)
		switch verdict {
		case "UNSAFE":
			verdict = "**UNSAFE**"
		case "UNKNOWN":
			verdict = "*UNKNOWN*"
		}
		row := []string{
			keyOf(&r.runs[0]).name(), r.Fault, fmtFencing(r.Fencing), verdict, fmtCellTrials(&r.Cell),
			median(r, func(s *results.Summary) float64 { return float64(s.Duplicates) }),
			median(r, func(s *results.Summary) float64 { return float64(s.LostUpdates) }),
			median(r, func(s *results.Summary) float64 { return float64(s.StaleAccepted) }),
			median(r, func(s *results.Summary) float64 { return float64(s.Overlaps) }),
			median(r, func(s *results.Summary) float64 { return float64(s.StaleRejected) }),
			fmtPercent(r.Availability.Median),
		}
		if exposure {
			row = append(row, results.FormatDuration(roundF(r.OverlapMaxNs.Median)))
		}
		if strikes {
			cell := i64(r.UnsafeStrikes) + "/" + i64(r.Strikes)
			if r.UnsafeStrikeRateCI95 != nil {
				cell += fmt.Sprintf(" (%s–%s%%)", pct0(r.UnsafeStrikeRateCI95[0]), pct0(r.UnsafeStrikeRateCI95[1]))
			}
			row = append(row, cell)
		}
		out = append(out, row)
	}
	if err := mdTable(w, header, right, out); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "\nCounts, availability and exposure are medians over each cell's trials; unsafe trials is k/N with the rate's 95%% Wilson interval over the judged trials (those not unknown).\n")
	return err
}

// unsafeLabel is the text of a safety-grid cell.
func unsafeLabel(s *results.Summary) string {
	switch n := s.UnsafeCount(); {
	case s.Unknown():
		return "unknown"
	case !results.IsUnsafe(s):
		return "safe"
	case n == 0:
		return "unsafe"
	default:
		return strconv.FormatInt(n, 10)
	}
}
