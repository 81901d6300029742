package report

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/lockbench/lockbench/results"
)

// column is one column of a results table: header, alignment and cell.
type column struct {
	name  string
	right bool
	cell  func(s *results.Summary) string
	// short is the header on screen, where width is scarce; name when empty.
	short string
}

func (c column) screenName() string {
	if c.short != "" {
		return c.short
	}
	return c.name
}

// contextColumns are the columns that tell rows apart, beyond the strategy:
// scenario when there is more than one, fault when any ran, and the offered
// rate and contenders when rows would otherwise look the same (sweeps).
func contextColumns(ss []results.Summary) []column {
	lb := newLabeler(ss)
	cols := []column{{name: "strategy", cell: func(s *results.Summary) string { return lb.label(keyOf(s)) }}}
	scenarios := map[string]bool{}
	anyFault := false
	for i := range ss {
		scenarios[ss[i].Scenario] = true
		anyFault = anyFault || ss[i].HasFault()
	}
	if len(scenarios) > 1 {
		cols = append(cols, column{name: "scenario", cell: func(s *results.Summary) string { return s.Scenario }})
	}
	if anyFault {
		cols = append(cols, column{name: "fault", cell: func(s *results.Summary) string {
			if s.Fault == "" {
				return results.FaultNone
			}
			return s.Fault
		}})
	}
	seen := map[string]bool{}
	dup := false
	for i := range ss {
		k := lb.label(keyOf(&ss[i])) + "\x00" + ss[i].Scenario + "\x00" + ss[i].Fault
		dup = dup || seen[k]
		seen[k] = true
	}
	if dup {
		cols = append(cols,
			column{name: "offered/s", right: true, cell: func(s *results.Summary) string {
				if s.Params.Rate == 0 {
					return "closed"
				}
				return fmtRate(s.Params.Rate)
			}},
			column{name: "contenders", right: true, cell: func(s *results.Summary) string { return strconv.FormatFloat(s.Params.Contenders(), 'g', 3, 64) }})
	}
	return cols
}

// latencyCol is the column of one statistic of one phase: "—" when the
// run does not report it (Latency.Has).
func latencyCol(name, short, phase, stat string) column {
	return column{name, true, func(s *results.Summary) string { return fmtStat(s.Latency[phase], stat) }, short}
}

func countCol(name, short string, pick func(s *results.Summary) int64) column {
	return column{name, true, func(s *results.Summary) string { return i64(pick(s)) }, short}
}

var (
	colPaymentsPerSec = column{name: "payments/s", right: true, cell: func(s *results.Summary) string { return fmtRate(s.PaymentsPerSec) }}
	colAcquireP50     = latencyCol("acquire p50", "acq p50", "acquire", results.StatP50)
	colAcquireP99     = latencyCol("acquire p99", "acq p99", "acquire", results.StatP99)
	colAcquireP999    = latencyCol("acquire p99.9", "acq p99.9", "acquire", results.StatP999)
	colDuplicates     = countCol("duplicates", "", func(s *results.Summary) int64 { return s.Duplicates })
	colLost           = countCol("lost", "", func(s *results.Summary) int64 { return s.Lost })
	colOverdrafts     = countCol("overdrafts", "", func(s *results.Summary) int64 { return s.Overdrafts })
	colOverlaps       = countCol("overlaps", "", func(s *results.Summary) int64 { return s.Overlaps })
	colStaleRejected  = countCol("stale rejected", "stale rej", func(s *results.Summary) int64 { return s.StaleRejected })
	colStaleAccepted  = countCol("stale accepted", "stale acc", func(s *results.Summary) int64 { return s.StaleAccepted })
	colUnprocessed    = countCol("unprocessed", "", func(s *results.Summary) int64 { return s.Unprocessed })
	colConflicts      = countCol("conflicts", "", func(s *results.Summary) int64 { return s.Conflicts })
	colErrors         = column{name: "errors", cell: func(s *results.Summary) string { return fmtErrors(s.Errors) }}
	colVerdict        = column{name: "verdict", cell: func(s *results.Summary) string { return verdictOf(s) }}
)

// Table writes ss as an aligned plain-text table for the terminal:
// strategy, payments/s, acquire p50/p99/p99.9, duplicates, lost,
// overdrafts, overlaps, stale writes rejected and accepted, unprocessed
// payments, errors by class and the verdict, in human units. Columns for
// scenario, fault, offered rate and contenders are added when the rows
// need them to be told apart. A percentile with fewer than MinTailSamples
// samples beyond it is "—". When a cell ran more than one trial, the table
// has one row per cell instead (TrialsTable).
func Table(w io.Writer, ss []results.Summary) error {
	if results.MaxTrials(ss) > 1 {
		return TrialsTable(w, ss)
	}
	cols := append(contextColumns(ss), colPaymentsPerSec, colAcquireP50, colAcquireP99, colAcquireP999,
		colDuplicates, colLost, colOverdrafts, colOverlaps, colStaleRejected, colStaleAccepted,
		colUnprocessed)
	if anyConflicts(ss) {
		cols = append(cols, colConflicts)
	}
	cols = append(cols, colErrors, colVerdict)
	return plainTable(w, cols, ss)
}

// plainTable writes the rows ss in cols, aligned with spaces.
func plainTable(w io.Writer, cols []column, ss []results.Summary) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	names := make([]string, len(cols))
	for i, c := range cols {
		names[i] = c.screenName()
	}
	fmt.Fprintln(tw, strings.Join(names, "\t"))
	for i := range ss {
		cells := make([]string, len(cols))
		for j, c := range cols {
			cells[j] = c.cell(&ss[i])
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("results: writing table: %w", err)
	}
	return nil
}

// resultsMarkdown writes the short per-strategy results table of
// report.md. The acquire p99 and p99.9 columns are there only when some
// row reports them, so the report prints no percentile its runs were too
// short for.
func resultsMarkdown(w io.Writer, ss []results.Summary) error {
	cols := contextColumns(ss)
	cols = append(cols, colPaymentsPerSec, colAcquireP50)
	for _, c := range []struct {
		col  column
		stat string
	}{{colAcquireP99, results.StatP99}, {colAcquireP999, results.StatP999}} {
		if anyHas(ss, "acquire", c.stat) {
			cols = append(cols, c.col)
		}
	}
	cols = append(cols, colDuplicates, colOverdrafts, colUnprocessed)
	if anyConflicts(ss) {
		cols = append(cols, colConflicts)
	}
	cols = append(cols, colErrors)
	return markdownOf(w, cols, ss)
}

// anyConflicts reports whether any of ss counted a conflict (an
// optimistic strategy's failed version check): only then do the tables
// have the column.
func anyConflicts(ss []results.Summary) bool {
	for i := range ss {
		if ss[i].Conflicts > 0 {
			return true
		}
	}
	return false
}

// anyHas reports whether any of ss reports stat of phase.
func anyHas(ss []results.Summary, phase, stat string) bool {
	for i := range ss {
		if ss[i].Latency[phase].Has(stat) {
			return true
		}
	}
	return false
}

func markdownOf(w io.Writer, cols []column, ss []results.Summary) error {
	header := make([]string, len(cols))
	right := make([]bool, len(cols))
	for i, c := range cols {
		header[i], right[i] = c.name, c.right
	}
	rows := make([][]string, len(ss))
	for i := range ss {
		rows[i] = make([]string, len(cols))
		for j, c := range cols {
			rows[i][j] = c.cell(&ss[i])
		}
	}
	return mdTable(w, header, right, rows)
}
