package report

import (
	"fmt"
	"html/template"
	"math"
	"strings"

	"github.com/lockbench/lockbench/results"
)

// htmlGrid is the safety grid of report.html: strategies (rows) against
// faults (columns), as SafetyGrid draws it and report.md's verdicts at a
// glance write it, each cell with the full figures in its hover text.
type htmlGrid struct {
	Faults []string
	Rows   []htmlGridRow
}

// htmlGridRow is one strategy's row, with its reading (glance.reading).
type htmlGridRow struct {
	Label, Strategy, Color, Reading string
	Cells                           []htmlGridCell
}

// htmlGridCell is one strategy under one fault. State is "safe",
// "unsafe", "unknown" (run, not judged) or "none" (not run); Shade, from 0 to 1, darkens an unsafe cell
// with its count as the PNG's red scale does.
type htmlGridCell struct {
	Text, Sub, State, Title string
	Shade                   float64
}

// Style is the cell's background and ink as CSS, on the PNG grid's
// colour scale (built from constants here, so trusted as CSS).
func (c htmlGridCell) Style() template.CSS {
	switch c.State {
	case "unsafe":
		fill := mix(unsafeLight, unsafeDark, c.Shade)
		ink := "#000"
		if c.Shade > 0.4 {
			ink = "#fff"
		}
		return template.CSS(fmt.Sprintf("background:#%02x%02x%02x;color:%s", fill.R, fill.G, fill.B, ink))
	case "safe":
		return template.CSS(fmt.Sprintf("background:#%02x%02x%02x;color:#%02x%02x%02x", safeFill.R, safeFill.G, safeFill.B, safeText.R, safeText.G, safeText.B))
	case "unknown":
		return template.CSS(fmt.Sprintf("background:#%02x%02x%02x;color:#%02x%02x%02x", unknownFill.R, unknownFill.G, unknownFill.B, unknownText.R, unknownText.G, unknownText.B))
	}
	return template.CSS(fmt.Sprintf("background:#%02x%02x%02x;color:#%02x%02x%02x", notRunFill.R, notRunFill.G, notRunFill.B, notRunText.R, notRunText.G, notRunText.B))
}

// htmlSafetyGrid is the grid of the verdict runs ss (glanceOf), which
// opens report.html: each cell the verdict with its unsafe trials as k of
// N and its exposure, as report.md's grid has them, on the PNG's colours.
// A cell of several runs (trials) is shaded by the least safe one, as the
// PNG does, and its hover has that run's figures and the Wilson interval
// of the unsafe rate.
func htmlSafetyGrid(ss []results.Summary) *htmlChart {
	gl := glanceOf(ss)
	if gl == nil {
		return nil
	}
	g := &htmlGrid{Faults: gl.Faults}
	for _, r := range gl.Rows {
		row := htmlGridRow{Label: r.Label, Strategy: r.Key.Strategy, Color: cssColor(r.Key.Strategy), Reading: gl.reading(r)}
		for i, c := range r.Cells {
			row.Cells = append(row.Cells, gridCellOf(row.Label, gl.Faults[i], c))
		}
		g.Rows = append(g.Rows, row)
	}
	return &htmlChart{Kind: htmlKindGrid, Grid: g}
}

// gridCellOf is the cell of one strategy under fault f; c is nil when
// it was not run.
func gridCellOf(label, f string, c *glanceCell) htmlGridCell {
	if c == nil {
		return htmlGridCell{Text: "not run", State: "none", Title: label + " × " + f + ": not run"}
	}
	worst := worstOf(c.Runs)
	out := htmlGridCell{Text: "SAFE", Sub: c.figures(), State: "safe"}
	switch {
	case c.unsafe():
		out.Text, out.State = "UNSAFE", "unsafe"
		out.Shade = math.Min(1, math.Log10(float64(max(worst.UnsafeCount(), 1)))/unsafeDecades)
	case c.unknown():
		out.Text, out.State = "UNKNOWN", "unknown"
	}
	n := c.Trials
	if n == 1 && worst.Payments > 0 && worst.Availability < 1 {
		if out.Sub != "" {
			out.Sub += " · "
		}
		out.Sub += "avail " + fmtPercent(worst.Availability)
	}
	var t strings.Builder
	fmt.Fprintf(&t, "%s × %s: %s", label, f, verdictOf(worst))
	if worst.Unjudged != "" {
		fmt.Fprintf(&t, " (%s)", worst.Unjudged)
	}
	fmt.Fprintf(&t, "\nduplicates %d, lost %d, overdrafts %d, lost updates %d, stale accepted %d",
		worst.Duplicates, worst.Lost, worst.Overdrafts, worst.LostUpdates, worst.StaleAccepted)
	fmt.Fprintf(&t, "\noverlaps %d, stale rejected %d, availability %s", worst.Overlaps, worst.StaleRejected, fmtPercent(worst.Availability))
	if e := c.exposure(); e != "" {
		fmt.Fprintf(&t, "\nexposure (longest overlap) %s", e)
		if n > 1 {
			t.WriteString(", median over the trials")
		}
	}
	if n > 1 {
		ci := c.UnsafeRateCI95
		fmt.Fprintf(&t, "\n%s trials (%s of the judged, 95%% CI %s–%s); counts above: the least safe trial",
			c.TrialsText(), fmtPercent(c.UnsafeRate), fmtPercent(ci[0]), fmtPercent(ci[1]))
	}
	if c.Strikes > 0 {
		ci := results.Wilson(int(c.UnsafeStrikes), int(c.Strikes))
		fmt.Fprintf(&t, "\nunsafe strikes %d of %d (%s, 95%% CI %s–%s)",
			c.UnsafeStrikes, c.Strikes, fmtPercent(float64(c.UnsafeStrikes)/float64(c.Strikes)), fmtPercent(ci[0]), fmtPercent(ci[1]))
	}
	out.Title = t.String()
	return out
}
