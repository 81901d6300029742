package report

import (
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/lockbench/lockbench/results"
)

// Safety-grid colours. Safe and unsafe differ in lightness as well as hue,
// and every cell carries its text, so the grid reads without colour vision.
var (
	safeFill    = color.RGBA{0xb3, 0xe2, 0xcd, 0xff} // pale bluish green
	safeText    = color.RGBA{0x00, 0x57, 0x3f, 0xff}
	unsafeLight = color.RGBA{0xfc, 0xae, 0x91, 0xff} // one unsafe outcome
	unsafeDark  = color.RGBA{0x99, 0x00, 0x0d, 0xff} // 10,000 or more
	notRunFill  = color.RGBA{0xf0, 0xf0, 0xf0, 0xff}
	notRunText  = color.RGBA{0x88, 0x88, 0x88, 0xff}
	unknownFill = color.RGBA{0xff, 0xf0, 0xb3, 0xff} // pale amber: run, but not judged
	unknownText = color.RGBA{0x6b, 0x4e, 0x00, 0xff}
)

// safetyGridName is the safety grid's name, of its files and in the page.
const safetyGridName = "safety-grid"

// Safety-grid geometry.
const (
	gridRowPx       = 56  // height of one row of cells
	gridChromePx    = 150 // title, axis labels and margins
	gridCellGapPx   = 2
	gridCellSize    = 15 // points, the count or "safe"
	gridCellSubSize = 10.5
	// unsafeDecades is how many decades of unsafe counts the red scale
	// spans before it saturates.
	unsafeDecades = 4
)

// SafetyGrid charts strategies (rows, fenced and unfenced runs of one
// strategy apart, e.g. "etcd (fenced)") against faults (columns): each cell
// is "safe" on green, or the run's unsafe count (Summary.UnsafeCount) on a red that
// darkens with it, with the availability underneath when payments went
// unprocessed. Of several runs in one cell, the least safe is shown. When
// a cell ran several trials, it shows k/N, the trials that lost safety,
// with the rate's 95% Wilson interval underneath, on a red that darkens
// with the rate. It returns nil when ss is empty.
func SafetyGrid(ss []results.Summary) (*Chart, error) {
	if len(ss) == 0 {
		return nil, nil
	}
	lb := newLabeler(ss)
	keys := sortedKeys(ss)
	var faults []string
	seenFault := map[string]bool{}
	type gridKey struct {
		k     seriesKey
		fault string
	}
	runs := map[gridKey][]results.Summary{}
	for i := range ss {
		s := &ss[i]
		f := faultName(s)
		if !seenFault[f] {
			seenFault[f] = true
			faults = append(faults, f)
		}
		gk := gridKey{keyOf(s), f}
		runs[gk] = append(runs[gk], *s)
	}
	sortFaults(faults)

	trials := results.MaxTrials(ss) > 1
	ch := newChart(safetyGridName, "Safety under faults: unsafe outcomes per run", "fault injected", "")
	ch.Caption = "A cell is one strategy under one fault: \"safe\" (green) means no duplicate, lost, " +
		"overdrawn, overwritten or stale-accepted payment; a number (red) counts them; " +
		"a percentage underneath is the share of payments processed when some were not; " +
		"\"unknown\" (amber) is a run that could not judge the lock (under 10% of its payments got an answer from it)."
	if trials {
		ch.plot.Title.Text = "Safety under faults: unsafe trials"
		ch.Caption = "A cell is one strategy under one fault over its trials: \"safe\" (green) means no trial had a duplicate, lost, " +
			"overdrawn, overwritten or stale-accepted payment; k/N (red, darker for a higher rate) is the trials that did, " +
			"with the rate's 95% Wilson interval over the judged trials underneath; trials that could not judge the lock " +
			"are unknown (amber when none was judged)."
	}
	ch.Height = px(float64(gridChromePx + gridRowPx*len(keys)))
	g := &cellGrid{}
	rows := make([]string, len(keys))
	for r, k := range keys {
		y := len(keys) - 1 - r // first strategy on top
		rows[y] = lb.label(k)
		for x, f := range faults {
			rs := runs[gridKey{k, f}]
			if trials && len(rs) > 0 {
				g.cells = append(g.cells, newTrialsCell(x, y, rs))
				continue
			}
			g.cells = append(g.cells, newCell(x, y, worstOf(rs)))
		}
	}
	ch.plot.Add(g)
	ch.plot.NominalX(faults...)
	ch.plot.NominalY(rows...)
	ch.plot.X.Padding, ch.plot.Y.Padding = 0, 0
	ch.plot.X.Min, ch.plot.X.Max = -0.5, float64(len(faults))-0.5
	ch.plot.Y.Min, ch.plot.Y.Max = -0.5, float64(len(keys))-0.5
	return ch, nil
}

// worstOf is the least safe of rs, nil for none.
func worstOf(rs []results.Summary) *results.Summary {
	var w *results.Summary
	for i := range rs {
		s := &rs[i]
		if w == nil || s.UnsafeCount() > w.UnsafeCount() || (results.IsUnsafe(s) && !results.IsUnsafe(w)) {
			w = s
		}
	}
	return w
}

// gridCell is one cell of the safety grid.
type gridCell struct {
	x, y      int
	fill, ink color.Color
	text, sub string
}

// newTrialsCell is a cell over trials: "safe", or k/N unsafe with the
// rate's Wilson interval.
func newTrialsCell(x, y int, rs []results.Summary) gridCell {
	c := gridCell{x: x, y: y}
	k, u := 0, 0
	for i := range rs {
		switch {
		case results.IsUnsafe(&rs[i]):
			k++
		case rs[i].Unknown():
			u++
		}
	}
	n := len(rs) - u // the judged trials
	ci := results.Wilson(k, n)
	switch {
	case n == 0:
		c.fill, c.ink, c.text = unknownFill, unknownText, "unknown"
		c.sub = fmt.Sprintf("%d/%d", u, len(rs))
		return c
	case k == 0 && u > 0:
		c.fill, c.ink, c.text = safeFill, safeText, "safe"
		c.sub = fmt.Sprintf("0/%d, %d unknown", n, u)
		return c
	}
	if k == 0 {
		c.fill, c.ink, c.text = safeFill, safeText, "safe"
		c.sub = fmt.Sprintf("0/%d (≤%s%%)", n, pct0(ci[1]))
		return c
	}
	t := float64(k) / float64(n)
	c.fill = mix(unsafeLight, unsafeDark, t)
	c.ink = color.Black
	if t > 0.4 {
		c.ink = color.White
	}
	c.text = fmt.Sprintf("%d/%d", k, n)
	c.sub = fmt.Sprintf("%s–%s%%", pct0(ci[0]), pct0(ci[1]))
	return c
}

func newCell(x, y int, s *results.Summary) gridCell {
	c := gridCell{x: x, y: y}
	switch {
	case s == nil:
		c.fill, c.ink, c.text = notRunFill, notRunText, "not run"
		return c
	case s.Unknown():
		c.fill, c.ink = unknownFill, unknownText
	case !results.IsUnsafe(s):
		c.fill, c.ink = safeFill, safeText
	default:
		t := math.Min(1, math.Log10(float64(max(s.UnsafeCount(), 1)))/unsafeDecades)
		c.fill = mix(unsafeLight, unsafeDark, t)
		c.ink = color.Black
		if t > 0.4 {
			c.ink = color.White
		}
	}
	c.text = unsafeLabel(s)
	if s.Payments > 0 && s.Availability < 1 {
		c.sub = "avail " + fmtPercent(s.Availability)
	}
	return c
}

// mix blends a into b by t in [0, 1].
func mix(a, b color.RGBA, t float64) color.RGBA {
	f := func(x, y uint8) uint8 { return uint8(math.Round(float64(x) + (float64(y)-float64(x))*t)) }
	return color.RGBA{f(a.R, b.R), f(a.G, b.G), f(a.B, b.B), 0xff}
}

// cellGrid draws the cells of the safety grid: one filled square per
// (fault, strategy) at integer data coordinates, with its text centred.
type cellGrid struct{ cells []gridCell }

// Plot implements plot.Plotter.
func (g *cellGrid) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	gap := px(gridCellGapPx)
	main := draw.TextStyle{Font: font.From(chartFont, gridCellSize), XAlign: draw.XCenter, YAlign: draw.YCenter, Handler: p.TextHandler}
	sub := main
	sub.Font = font.From(chartFont, gridCellSubSize)
	for _, cell := range g.cells {
		x0, x1 := trX(float64(cell.x)-0.5)+gap, trX(float64(cell.x)+0.5)-gap
		y0, y1 := trY(float64(cell.y)-0.5)+gap, trY(float64(cell.y)+0.5)-gap
		c.FillPolygon(cell.fill, []vg.Point{{X: x0, Y: y0}, {X: x1, Y: y0}, {X: x1, Y: y1}, {X: x0, Y: y1}})
		mid := vg.Point{X: (x0 + x1) / 2, Y: (y0 + y1) / 2}
		main.Color, sub.Color = cell.ink, cell.ink
		if cell.sub == "" {
			c.FillText(main, mid, cell.text)
			continue
		}
		h := main.Height(cell.text)
		c.FillText(main, vg.Point{X: mid.X, Y: mid.Y + h*0.35}, cell.text)
		c.FillText(sub, vg.Point{X: mid.X, Y: mid.Y - h*0.55}, cell.sub)
	}
}
