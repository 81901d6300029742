package report

import (
	"fmt"
	"html/template"
	"math"
	"strings"

	"github.com/lockbench/lockbench/results"
)

// htmlGrid is the safety grid of report.html: strategies (rows) against
// faults (columns), as SafetyGrid draws it, each cell with the full
// figures in its hover text.
type htmlGrid struct {
	Faults []string
	Rows   []htmlGridRow
}

// htmlGridRow is one strategy's row.
type htmlGridRow struct {
	Label, Strategy, Color string
	Cells                  []htmlGridCell
}

// htmlGridCell is one strategy under one fault. State is "safe",
// "unsafe" or "none" (not run); Shade, from 0 to 1, darkens an unsafe cell
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
	}
	return template.CSS(fmt.Sprintf("background:#%02x%02x%02x;color:#%02x%02x%02x", notRunFill.R, notRunFill.G, notRunFill.B, notRunText.R, notRunText.G, notRunText.B))
}

// htmlSafetyGrid is SafetyGrid's data. A cell of several runs (trials)
// shows the least safe one, as the PNG does, and says in how many of them
// safety was lost, with the Wilson interval of that rate in its hover.
func htmlSafetyGrid(ss []results.Summary) *htmlChart {
	if len(ss) == 0 {
		return nil
	}
	lb := newLabeler(ss)
	keys := sortedKeys(ss)
	var faults []string
	seen := map[string]bool{}
	cells := map[seriesKey]map[string][]*results.Summary{}
	for i := range ss {
		s := &ss[i]
		f := s.Fault
		if f == "" {
			f = results.FaultNone
		}
		if !seen[f] {
			seen[f] = true
			faults = append(faults, f)
		}
		k := keyOf(s)
		if cells[k] == nil {
			cells[k] = map[string][]*results.Summary{}
		}
		cells[k][f] = append(cells[k][f], s)
	}
	sortFaults(faults)
	g := &htmlGrid{Faults: faults}
	for _, k := range keys {
		row := htmlGridRow{Label: lb.label(k), Strategy: k.Strategy, Color: cssColor(k.Strategy)}
		for _, f := range faults {
			row.Cells = append(row.Cells, gridCellOf(row.Label, f, cells[k][f]))
		}
		g.Rows = append(g.Rows, row)
	}
	return &htmlChart{Kind: htmlKindGrid, Grid: g}
}

// gridCellOf is the cell of the runs of one strategy under fault f.
func gridCellOf(label, f string, runs []*results.Summary) htmlGridCell {
	if len(runs) == 0 {
		return htmlGridCell{Text: "not run", State: "none", Title: label + " × " + f + ": not run"}
	}
	worst, unsafeRuns := runs[0], 0
	var strikes, unsafeStrikes int64
	for _, s := range runs {
		if results.IsUnsafe(s) {
			unsafeRuns++
		}
		strikes += s.Strikes
		unsafeStrikes += s.UnsafeStrikes
		if s.UnsafeCount() > worst.UnsafeCount() || (results.IsUnsafe(s) && !results.IsUnsafe(worst)) {
			worst = s
		}
	}
	c := htmlGridCell{Text: unsafeLabel(worst), State: "safe"}
	if results.IsUnsafe(worst) {
		c.State = "unsafe"
		c.Shade = math.Min(1, math.Log10(float64(max(worst.UnsafeCount(), 1)))/unsafeDecades)
	}
	n := len(runs)
	switch {
	case n > 1:
		c.Sub = fmt.Sprintf("unsafe %d/%d", unsafeRuns, n)
	case worst.Payments > 0 && worst.Availability < 1:
		c.Sub = "avail " + fmtPercent(worst.Availability)
	}
	var t strings.Builder
	fmt.Fprintf(&t, "%s × %s: %s", label, f, verdictOf(worst))
	fmt.Fprintf(&t, "\nduplicates %d, lost %d, overdrafts %d, lost updates %d, stale accepted %d",
		worst.Duplicates, worst.Lost, worst.Overdrafts, worst.LostUpdates, worst.StaleAccepted)
	fmt.Fprintf(&t, "\noverlaps %d, stale rejected %d, availability %s", worst.Overlaps, worst.StaleRejected, fmtPercent(worst.Availability))
	if n > 1 {
		ci := results.Wilson(unsafeRuns, n)
		fmt.Fprintf(&t, "\nunsafe in %d of %d trials (%s, 95%% CI %s–%s); figures above: the least safe trial",
			unsafeRuns, n, fmtPercent(float64(unsafeRuns)/float64(n)), fmtPercent(ci[0]), fmtPercent(ci[1]))
	}
	if strikes > 0 {
		ci := results.Wilson(int(unsafeStrikes), int(strikes))
		fmt.Fprintf(&t, "\nunsafe strikes %d of %d (%s, 95%% CI %s–%s)",
			unsafeStrikes, strikes, fmtPercent(float64(unsafeStrikes)/float64(strikes)), fmtPercent(ci[0]), fmtPercent(ci[1]))
	}
	c.Title = t.String()
	return c
}
