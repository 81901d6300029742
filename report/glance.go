package report

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/lockbench/lockbench/results"
)

// The verdicts at a glance open report.md and report.html: strategies
// (rows) against faults (columns), each cell the verdict, its unsafe
// trials as k of N and its exposure, then one line per strategy read off
// its row. Every word of a reading comes from the grid, so a reading
// cannot say more than the runs showed.

// glance is the grid of the verdict runs (results.VerdictRuns): the rows
// in legend order (Styles, fenced and unfenced runs of a strategy
// apart), the faults in FaultOrder, "none" being the scenario's fault-free
// baseline.
type glance struct {
	Faults []string
	Rows   []glanceRow
}

// glanceRow is one strategy's row; a nil cell was not run.
type glanceRow struct {
	Key   seriesKey
	Label string
	Cells []*glanceCell
}

// glanceCell is one strategy under one fault: its runs (every trial, of
// every scenario that ran it) and their statistics (results.CellOf).
type glanceCell struct {
	results.Cell
	Runs []results.Summary
}

// glanceOf groups the verdict runs ss into the grid; nil when ss is empty.
func glanceOf(ss []results.Summary) *glance {
	if len(ss) == 0 {
		return nil
	}
	lb := newLabeler(ss)
	g := &glance{}
	runs := map[seriesKey]map[string][]results.Summary{}
	for i := range ss {
		s := &ss[i]
		f := faultName(s)
		if !slices.Contains(g.Faults, f) {
			g.Faults = append(g.Faults, f)
		}
		k := keyOf(s)
		if runs[k] == nil {
			runs[k] = map[string][]results.Summary{}
		}
		runs[k][f] = append(runs[k][f], *s)
	}
	sortFaults(g.Faults)
	for _, k := range sortedKeys(ss) {
		row := glanceRow{Key: k, Label: lb.label(k)}
		for _, f := range g.Faults {
			var c *glanceCell
			if rs := runs[k][f]; len(rs) > 0 {
				c = &glanceCell{Cell: results.CellOf(rs), Runs: rs}
			}
			row.Cells = append(row.Cells, c)
		}
		g.Rows = append(g.Rows, row)
	}
	return g
}

// unsafe reports whether any run of c lost safety.
func (c *glanceCell) unsafe() bool { return c.UnsafeTrials > 0 }

// unknown reports whether no run of c could be judged.
func (c *glanceCell) unknown() bool { return c.UnsafeTrials == 0 && c.Judged() == 0 }

// trials is "k of N": the unsafe trials of the cell, for an unsafe cell
// always, for a safe one when it ran more than one trial, with
// ", unknown u" when some could not be judged; "" otherwise.
func (c *glanceCell) trials() string {
	if !c.unsafe() && c.Trials < 2 && c.UnknownTrials == 0 {
		return ""
	}
	s := strconv.Itoa(c.UnsafeTrials) + " of " + strconv.Itoa(c.Trials)
	if c.unknown() {
		s = strconv.Itoa(c.UnknownTrials) + " of " + strconv.Itoa(c.Trials)
	} else if c.UnknownTrials > 0 {
		s += ", unknown " + strconv.Itoa(c.UnknownTrials)
	}
	return s
}

// exposure is the longest overlap of two holders (OverlapMaxNs), the
// median over the trials, formatted; "" when none was measured.
func (c *glanceCell) exposure() string {
	ns := roundF(c.OverlapMaxNs.Median)
	if !c.OverlapMaxNs.OK() || ns <= 0 {
		return ""
	}
	return results.FormatDuration(ns)
}

// figures is what a cell says after its verdict: "6 of 6 · 1.20s".
func (c *glanceCell) figures() string {
	var parts []string
	for _, p := range []string{c.trials(), c.exposure()} {
		if p != "" {
			parts = append(parts, p)
		}
	}
	return strings.Join(parts, " · ")
}

// text is the cell as report.md shows it: "SAFE", "SAFE 0 of 6",
// "UNSAFE 6 of 6 · 1.20s", or "—" for a cell not run.
func (c *glanceCell) text() string {
	if c == nil {
		return results.Dash
	}
	v := "SAFE"
	switch {
	case c.unsafe():
		v = "UNSAFE"
	case c.unknown():
		v = "UNKNOWN"
	}
	if f := c.figures(); f != "" {
		v += " " + f
	}
	return v
}

// reading is one line about row r, from its cells alone: whether it lost
// safety without a fault, then under which faults it was unsafe and under
// which safe ("unsafe under pause (2 of 6), slow; safe under kill-node"),
// or "… under every fault run" when all agree.
func (g *glance) reading(r glanceRow) string {
	var parts []string
	var base *glanceCell
	var unsafe, safe, unknown []string
	fullyUnsafe := true
	for i, c := range r.Cells {
		switch {
		case c == nil:
		case g.Faults[i] == results.FaultNone:
			base = c
		case c.unsafe():
			unsafe = append(unsafe, g.Faults[i]+partly(c))
			fullyUnsafe = fullyUnsafe && c.UnsafeTrials == c.Trials
		case c.unknown():
			unknown = append(unknown, g.Faults[i])
		default:
			safe = append(safe, g.Faults[i])
		}
	}
	faulted := len(unsafe) + len(safe) + len(unknown)
	switch {
	case base != nil && base.unsafe():
		parts = append(parts, "unsafe even without a fault"+partly(base))
	case base != nil && faulted == 0:
		parts = append(parts, "safe without a fault")
	}
	switch {
	case faulted == 0:
		parts = append(parts, "not run under a fault")
	case faulted > 1 && len(safe) == 0 && len(unknown) == 0 && fullyUnsafe:
		parts = append(parts, "unsafe under every fault run")
	case faulted > 1 && len(unsafe) == 0 && len(unknown) == 0:
		parts = append(parts, "safe under every fault run")
	default:
		if len(unsafe) > 0 {
			parts = append(parts, "unsafe under "+strings.Join(unsafe, ", "))
		}
		if len(safe) > 0 {
			parts = append(parts, "safe under "+strings.Join(safe, ", "))
		}
		if len(unknown) > 0 {
			parts = append(parts, "unknown (not judged) under "+strings.Join(unknown, ", "))
		}
	}
	return strings.Join(parts, "; ")
}

// partly is " (k of N)" for a cell unsafe in some of its trials only.
func partly(c *glanceCell) string {
	if c.UnsafeTrials == 0 || c.UnsafeTrials == c.Trials {
		return ""
	}
	return fmt.Sprintf(" (%d of %d)", c.UnsafeTrials, c.Trials)
}

// glanceNote says how to read a cell of the grid, and notRun, when set,
// what marks a cell not run.
func glanceNote(notRun string) string {
	s := "A cell is one strategy under one fault (none: the fault-free baseline of the same scenario): " +
		"its verdict, then k of N, the trials that were unsafe, and the exposure, the longest time two holders " +
		"overlapped (median over the trials)"
	if notRun != "" {
		s += "; " + notRun + " marks a cell not run"
	}
	return s + ". The counts behind each verdict are in Verdicts below."
}

// glanceMarkdown writes report.md's "Verdicts at a glance" for the verdict
// runs ss: the grid, a reading per strategy and the note; nothing when ss
// is empty.
func glanceMarkdown(w io.Writer, ss []results.Summary) error {
	g := glanceOf(ss)
	if g == nil {
		return nil
	}
	var b strings.Builder
	b.WriteString("## Verdicts at a glance\n\n")
	header := append([]string{"strategy"}, g.Faults...)
	right := make([]bool, len(header))
	var rows [][]string
	for _, r := range g.Rows {
		row := []string{r.Label}
		for _, c := range r.Cells {
			t := c.text()
			if c != nil && c.unsafe() {
				t = "**" + t + "**"
			}
			row = append(row, t)
		}
		rows = append(rows, row)
	}
	if err := mdTable(&b, header, right, rows); err != nil {
		return err
	}
	b.WriteString("\n")
	for _, r := range g.Rows {
		fmt.Fprintf(&b, "- **%s**: %s\n", r.Label, g.reading(r))
	}
	b.WriteString("\n" + glanceNote(results.Dash) + "\n\n")
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("results: writing report: %w", err)
	}
	return nil
}
