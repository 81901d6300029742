package report

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/lockbench/lockbench/results"
)

// Tables of cells across trials: one row per cell, each figure the median
// over the cell's trials with its interval, safety as k of N trials.

// cellRow is one cell of a table: its statistics and its trials.
type cellRow struct {
	results.Cell
	runs []results.Summary
}

// cellRows groups ss into cells (Aggregate), in the order of each cell's
// first run.
func cellRows(ss []results.Summary) []cellRow {
	groups := results.GroupTrials(ss)
	out := make([]cellRow, len(groups))
	for i, g := range groups {
		out[i] = cellRow{Cell: results.CellOf(g.Runs), runs: g.Runs}
	}
	return out
}

// cellColumn is a column of a table of cells.
type cellColumn struct {
	name  string
	right bool
	cell  func(r *cellRow) string
}

// contextCellColumns are contextColumns, read from each cell's first
// trial.
func contextCellColumns(rows []cellRow) []cellColumn {
	firsts := make([]results.Summary, len(rows))
	for i := range rows {
		firsts[i] = rows[i].runs[0]
	}
	var out []cellColumn
	for _, c := range contextColumns(firsts) {
		out = append(out, cellColumn{c.name, c.right, func(r *cellRow) string { return c.cell(&r.runs[0]) }})
	}
	return out
}

// fmtEstimate formats an Estimate for a table: "1234 [1180–1290]" with its
// 95% CI, "1234 (1180–1290)" with the range of fewer trials, a suffix
// "n=4" when it is over fewer trials than the cell has, and "—" without a
// figure.
func fmtEstimate(e results.Estimate, trials int, f func(float64) string) string {
	if !e.OK() {
		return results.Dash
	}
	var b strings.Builder
	b.WriteString(f(e.Median))
	if e.N > 1 {
		open, close := "(", ")"
		if e.CI {
			open, close = "[", "]"
		}
		b.WriteString(" " + open + f(e.Lo) + "–" + f(e.Hi) + close)
	}
	if e.N < trials {
		b.WriteString(" n=" + strconv.Itoa(e.N))
	}
	return b.String()
}

func fmtDurF(v float64) string { return results.FormatDuration(roundF(v)) }

// fmtTrials is safety as k/N trials, with the rate's Wilson interval when
// there is more than one trial: "3/6 (19–81%)".
func fmtTrials(k, n int) string {
	s := strconv.Itoa(k) + "/" + strconv.Itoa(n)
	if n > 1 {
		ci := results.Wilson(k, n)
		s += fmt.Sprintf(" (%s–%s)", pct0(ci[0]), pct0(ci[1])+"%")
	}
	return s
}

// pct0 is a fraction as a whole percentage, without the sign.
func pct0(f float64) string { return strconv.FormatFloat(100*f, 'f', 0, 64) }

// estimateNote explains the intervals of a table of cells.
func estimateNote(rows []cellRow) string {
	ci, rng := false, false
	for i := range rows {
		for _, e := range []results.Estimate{rows[i].PaymentsPerSec} {
			ci, rng = ci || e.CI, rng || (!e.CI && e.N > 1)
		}
		for _, m := range rows[i].Latency {
			for _, e := range m {
				ci, rng = ci || e.CI, rng || (!e.CI && e.N > 1)
			}
		}
	}
	var parts []string
	parts = append(parts, "Figures are medians over trials")
	if ci {
		parts = append(parts, fmt.Sprintf("[a–b] is the median's 95%% confidence interval (order statistics, %d trials or more)", results.MinTrialsForCI))
	}
	if rng {
		parts = append(parts, fmt.Sprintf("(a–b) is the range of the trials: fewer than %d, too few for a confidence interval", results.MinTrialsForCI))
	}
	parts = append(parts, "unsafe is k/N trials with the rate's 95% Wilson interval", results.Dash+" is a percentile no trial had enough samples for")
	return strings.Join(parts, "; ") + "."
}

var (
	cellColTrials = cellColumn{"trials", true, func(r *cellRow) string { return strconv.Itoa(r.Trials) }}
	cellColPPS    = cellColumn{"payments/s", true, func(r *cellRow) string {
		return fmtEstimate(r.PaymentsPerSec, r.Trials, fmtRate)
	}}
	cellColUnsafe = cellColumn{"unsafe", true, func(r *cellRow) string { return fmtCellTrials(&r.Cell) }}
	cellColErrors = cellColumn{"errors", false, func(r *cellRow) string {
		m := map[string]int64{}
		for _, s := range r.runs {
			for k, v := range s.Errors {
				m[k] += v
			}
		}
		return fmtErrors(m)
	}}
	cellColVerdict = cellColumn{"verdict", false, func(r *cellRow) string { return cellVerdict(&r.Cell) }}
)

func cellLatencyCol(name, phase, stat string) cellColumn {
	return cellColumn{name, true, func(r *cellRow) string {
		return fmtEstimate(r.Latency[phase][stat], r.Trials, fmtDurF)
	}}
}

// cellVerdict is UNSAFE when any trial lost safety, UNKNOWN when none
// could be judged, else SAFE.
func cellVerdict(c *results.Cell) string {
	switch {
	case c.UnsafeTrials > 0:
		return "UNSAFE"
	case c.Judged() == 0:
		return "UNKNOWN"
	}
	return "SAFE"
}

// fmtCellTrials is a cell's unsafe trials, k/N, with the unknown ones
// and the 95% Wilson interval of the unsafe rate over the judged trials:
// "3/4 (30–95%)", "3/4, 1 unknown (44–100%)".
func fmtCellTrials(c *results.Cell) string {
	s := strconv.Itoa(c.UnsafeTrials) + "/" + strconv.Itoa(c.Trials)
	if c.UnknownTrials > 0 {
		s += ", " + strconv.Itoa(c.UnknownTrials) + " unknown"
	}
	if n := c.Judged(); c.Trials > 1 && n > 0 {
		ci := results.Wilson(c.UnsafeTrials, n)
		s += fmt.Sprintf(" (%s–%s)", pct0(ci[0]), pct0(ci[1])+"%")
	}
	return s
}

// TrialsTable writes ss as an aligned table for the terminal with one row
// per cell: trials, payments/s and acquire p50/p99/p99.9 as medians with
// their intervals, unsafe trials (k/N with the rate's interval), errors
// summed over the trials and the verdict (UNSAFE when any trial was), then
// a line saying how to read the intervals.
func TrialsTable(w io.Writer, ss []results.Summary) error {
	rows := cellRows(ss)
	cols := append(contextCellColumns(rows), cellColTrials, cellColPPS,
		cellLatencyCol("acq p50", "acquire", results.StatP50), cellLatencyCol("acq p99", "acquire", results.StatP99),
		cellLatencyCol("acq p99.9", "acquire", results.StatP999), cellColUnsafe, cellColErrors, cellColVerdict)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	names := make([]string, len(cols))
	for i, c := range cols {
		names[i] = c.name
	}
	fmt.Fprintln(tw, strings.Join(names, "\t"))
	for i := range rows {
		cells := make([]string, len(cols))
		for j, c := range cols {
			cells[j] = c.cell(&rows[i])
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("results: writing table: %w", err)
	}
	_, err := fmt.Fprintln(w, "\n"+estimateNote(rows))
	return err
}

// trialsMarkdown writes the results table of report.md for cells with
// trials; the p99 and p99.9 columns only when some trial reports them.
func trialsMarkdown(w io.Writer, ss []results.Summary) error {
	rows := cellRows(ss)
	cols := append(contextCellColumns(rows), cellColTrials, cellColPPS, cellLatencyCol("acquire p50", "acquire", results.StatP50))
	if anyHas(ss, "acquire", results.StatP99) {
		cols = append(cols, cellLatencyCol("acquire p99", "acquire", results.StatP99))
	}
	if anyHas(ss, "acquire", results.StatP999) {
		cols = append(cols, cellLatencyCol("acquire p99.9", "acquire", results.StatP999))
	}
	cols = append(cols, cellColUnsafe, cellColErrors)
	if err := cellMarkdown(w, cols, rows); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w, "\n"+estimateNote(rows))
	return err
}

func cellMarkdown(w io.Writer, cols []cellColumn, rows []cellRow) error {
	header := make([]string, len(cols))
	right := make([]bool, len(cols))
	for i, c := range cols {
		header[i], right[i] = c.name, c.right
	}
	out := make([][]string, len(rows))
	for i := range rows {
		out[i] = make([]string, len(cols))
		for j, c := range cols {
			out[i][j] = c.cell(&rows[i])
		}
	}
	return mdTable(w, header, right, out)
}
