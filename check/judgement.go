package check

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/lockbench/lockbench/results"
)

// Judgement is the verdict a history derives, with what it rests on, by
// summary.json's names.
type Judgement struct {
	Verdict      string           `json:"verdict"`
	Unsafe       bool             `json:"unsafe"`
	Availability float64          `json:"availability"`
	Errors       map[string]int64 `json:"errors,omitempty"`
}

// exactErrors are the error classes every one of which a lock run's
// history records (on its acquire or release line): the row must have
// the same count. The others (store, other, agent_lost) also arise where
// no line is written (a store call, a lost instance), so the history's
// count is a floor.
var exactErrors = []string{"timeout", "refused", "unavailable", "lost_lock", "adapter_lost"}

// judgementOf is d's judgement, by results.Summary's rules. A count the
// history does not derive (not_acquired outside lock runs) is taken from
// the first row that has it.
func judgementOf(d *derivation, rows []row) Judgement {
	return judge(d, &d.counts, rows)
}

// judge is the judgement of the counts c of d.
func judge(d *derivation, c *Counts, rows []row) Judgement {
	s := results.Summary{
		Payments: c.Payments, Processed: c.Processed, NotAcquired: c.NotAcquired, StaleRejected: c.StaleRejected,
		Duplicates: c.Duplicates, Lost: c.Lost, Overdrafts: c.Overdrafts, LostUpdates: c.LostUpdates, StaleAccepted: c.StaleAccepted,
		Strikes: c.Strikes, StrikesMissed: c.StrikesMissed,
	}
	if len(rows) > 0 {
		s.Fault = rows[0].fault
	}
	if d.underived["not_acquired"] {
		for _, rw := range rows {
			if v, ok := rw.counts["not_acquired"]; ok {
				s.NotAcquired = v
				break
			}
		}
	}
	s.Finish()
	j := Judgement{Verdict: s.Verdict, Unsafe: s.Unsafe, Availability: s.Availability}
	if d.kind == "lock" {
		j.Errors = d.errs
	}
	return j
}

// compareJudgement compares the derived judgement j with each row's: the
// verdict, unsafe, availability, and (lock runs) the errors by class.
// With transactions of unknown outcome (d.hi), a row agrees with either
// end of the range: the judgement of none of them committed (j) or of all
// (availability anywhere between the two).
func compareJudgement(d *derivation, j *Judgement, rows []row) []Disagreement {
	hi := *j
	if d.hi != nil {
		hi = judge(d, d.hi, rows)
	}
	var dis []Disagreement
	text := func(field, file, h, r string) {
		dis = append(dis, Disagreement{Field: field, File: file, HistoryText: h, RowText: r})
	}
	for _, rw := range rows {
		jr := &rw.judged
		if jr.Unsafe != nil && *jr.Unsafe != j.Unsafe && *jr.Unsafe != hi.Unsafe {
			text("unsafe", rw.file, strconv.FormatBool(j.Unsafe), strconv.FormatBool(*jr.Unsafe))
		}
		if jr.Verdict != nil && *jr.Verdict != j.Verdict && *jr.Verdict != hi.Verdict {
			text("verdict", rw.file, j.Verdict, *jr.Verdict)
		}
		lo, up := min(j.Availability, hi.Availability), max(j.Availability, hi.Availability)
		if a := jr.Availability; a != nil && (*a < lo-1e-9 || *a > up+1e-9) {
			text("availability", rw.file, fmtShare(j.Availability), fmtShare(*a))
		}
		if d.kind != "lock" || jr.Errors == nil {
			continue // a row without errors (a file written before them)
		}
		classes := map[string]bool{}
		for k := range j.Errors {
			classes[k] = true
		}
		for k := range jr.Errors {
			classes[k] = true
		}
		names := make([]string, 0, len(classes))
		for k := range classes {
			names = append(names, k)
		}
		slices.Sort(names)
		for _, k := range names {
			h, r := j.Errors[k], jr.Errors[k]
			if h == r || !slices.Contains(exactErrors, k) && h < r {
				continue
			}
			dis = append(dis, Disagreement{Field: "errors." + k, File: rw.file, History: h, Row: r})
		}
	}
	return dis
}

func fmtShare(f float64) string { return fmt.Sprintf("%.6f", f) }
