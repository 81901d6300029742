package report

import (
	"fmt"
	"io"
	"strconv"

	"github.com/lockbench/lockbench/results"
)

// outcomeMarkdown writes, for the rows whose runs split acquire latency by
// outcome (Summary.LatencyByOutcome), how long the deliveries that found
// the lock free and those that waited for a holder took, and what share
// waited or gave up: the acquire percentiles mix the two. Medians over
// trials when there are several. It writes nothing when no run has the
// split.
func outcomeMarkdown(w io.Writer, ss []results.Summary) error {
	var have []results.Summary
	for _, s := range ss {
		if len(s.LatencyByOutcome) > 0 {
			have = append(have, s)
		}
	}
	if len(have) == 0 {
		return nil
	}
	rows := cellRows(have)
	stat := func(name, outcome, stat string) cellColumn {
		return cellColumn{name, true, func(r *cellRow) string {
			return fmtEstimate(r.LatencyByOutcome[outcome][stat], r.Trials, fmtDurF)
		}}
	}
	share := func(name, outcome string) cellColumn {
		return cellColumn{name, true, func(r *cellRow) string {
			var n, all int64
			for _, s := range r.runs {
				for o, l := range s.LatencyByOutcome {
					all += l.Count
					if o == outcome {
						n += l.Count
					}
				}
			}
			if all == 0 {
				return results.Dash
			}
			return fmtPercent(float64(n)/float64(all)) + " (" + strconv.FormatInt(n, 10) + ")"
		}}
	}
	cols := append(contextCellColumns(rows),
		stat("first try p50", results.OutcomeFirstTry, results.StatP50), stat("first try p99", results.OutcomeFirstTry, results.StatP99),
		stat("waited p50", results.OutcomeWaited, results.StatP50), stat("waited p99", results.OutcomeWaited, results.StatP99),
		share("waited", results.OutcomeWaited), share("gave up", results.OutcomeGaveUp))
	if _, err := fmt.Fprint(w, "\nAcquire latency by outcome: deliveries that found the lock free at once (first try) "+
		"against those that retried or queued behind a holder (waited); the shares count acquires over all trials.\n\n"); err != nil {
		return err
	}
	return cellMarkdown(w, cols, rows)
}
