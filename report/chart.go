package report

import (
	"bytes"
	"fmt"
	"image/color"
	"io"
	"math"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Chart geometry: PNGs are ChartWidthPx wide at chartDPI so they are shown
// at their natural size in a README (about 900 px of content width), with
// text sizes that stay legible there.
const (
	// ChartWidthPx is the width of every chart's PNG, in pixels.
	ChartWidthPx = 900
	// chartHeightPx is the height of the line charts' PNGs.
	chartHeightPx = 540
	chartDPI      = 96

	titleSize  = 16 // points; 1pt = 4/3 px at 96 dpi
	labelSize  = 13
	tickSize   = 12
	legendSize = 12
	lineWidth  = 2
	glyphSize  = 3.5
)

// px converts pixels of the PNG to vg lengths.
func px(n float64) vg.Length { return vg.Length(n) * vg.Inch / chartDPI }

var chartFont = font.Font{Typeface: "Liberation", Variant: "Sans"}

// svgFontFamily is the chart font in SVG, with fallbacks of the same
// metrics (Arial, Helvetica) so text keeps its measured width.
const svgFontFamily = "font-family:'Liberation Sans',Arial,Helvetica,sans-serif;"

// Chart is one chart, ready to be written as PNG or SVG.
type Chart struct {
	// Name is the file name without extension ("latency-spectrum-total").
	Name string
	// Title is the chart's heading in report.md.
	Title string
	// Caption is one line under the chart saying how to read it.
	Caption string
	// Width and Height are the chart's size.
	Width, Height vg.Length

	plot   *plot.Plot
	legend plot.Legend
	// yLabel is drawn by the chart, not by gonum/plot, which pads a log
	// axis as if its label sat at the linear midpoint (far up the axis).
	yLabel string
}

// newChart returns a chart with lockbench's fonts and no data yet.
func newChart(name, title, xLabel, yLabel string) *Chart {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font = font.From(chartFont, titleSize)
	p.Title.Padding = vg.Points(8)
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font = font.From(chartFont, labelSize)
		a.Label.Padding = vg.Points(4)
		a.Tick.Label.Font = font.From(chartFont, tickSize)
	}
	p.X.Label.Text = xLabel
	p.X.Tick.Marker = linearTicks{}
	p.Y.Tick.Marker = linearTicks{}
	lg := plot.NewLegend()
	lg.TextStyle.Font = font.From(chartFont, legendSize)
	lg.Top, lg.Left = true, true
	lg.ThumbnailWidth = vg.Points(24)
	lg.Padding = vg.Points(4)
	return &Chart{
		Name: name, Title: title,
		Width: px(ChartWidthPx), Height: px(chartHeightPx),
		plot: p, legend: lg, yLabel: yLabel,
	}
}

// addGrid draws light lines at the major ticks, under the data added
// after it.
func (ch *Chart) addGrid() {
	g := plotter.NewGrid()
	g.Vertical.Color = color.Gray{Y: 0xdd}
	g.Horizontal.Color = color.Gray{Y: 0xdd}
	ch.plot.Add(g)
}

// draw renders the chart on c: the plot, with the legend in a column to
// its right so it never hides data.
func (ch *Chart) draw(c draw.Canvas) {
	c.SetColor(color.White)
	c.Fill(c.Rectangle.Path())
	margin := vg.Points(10)
	area := draw.Crop(c, margin, -margin, margin, -margin)
	r := ch.legend.Rectangle(area)
	if w := r.Max.X - r.Min.X; w > 0 {
		gap := vg.Points(12)
		top := ch.plot.Title.TextStyle.Rectangle(ch.plot.Title.Text).Size().Y + ch.plot.Title.Padding + vg.Points(4)
		legendArea := draw.Crop(area, area.Size().X-w, 0, 0, -top)
		area = draw.Crop(area, 0, -(w + gap), 0, 0)
		ch.legend.Draw(legendArea)
	}
	if ch.yLabel != "" {
		sty := ch.plot.Y.Label.TextStyle
		h := sty.Height(ch.yLabel)
		descent := sty.FontExtents().Descent
		sty.Rotation += math.Pi / 2
		c.FillText(sty, vg.Point{X: area.Min.X + h - descent, Y: area.Center().Y}, ch.yLabel)
		area = draw.Crop(area, h+ch.plot.Y.Label.Padding, 0, 0, 0)
	}
	ch.plot.Draw(area)
}

// render draws the chart, turning gonum/plot's panics (it panics on values
// a log axis cannot show) into errors.
func (ch *Chart) render(c draw.Canvas) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("results: drawing chart %s: %v", ch.Name, r)
		}
	}()
	ch.draw(c)
	return nil
}

// WritePNG writes the chart as a PNG image ChartWidthPx wide.
func (ch *Chart) WritePNG(w io.Writer) error {
	cv := vgimg.NewWith(vgimg.UseWH(ch.Width, ch.Height), vgimg.UseDPI(chartDPI))
	if err := ch.render(draw.New(cv)); err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: cv}).WriteTo(w); err != nil {
		return fmt.Errorf("results: writing %s.png: %w", ch.Name, err)
	}
	return nil
}

// WriteSVG writes the chart as an SVG document. Fonts are referenced by
// name (Liberation Sans, then Arial or Helvetica), not embedded.
func (ch *Chart) WriteSVG(w io.Writer) error {
	cv := vgsvg.New(ch.Width, ch.Height)
	if err := ch.render(draw.New(cv)); err != nil {
		return err
	}
	var buf bytes.Buffer
	if _, err := cv.WriteTo(&buf); err != nil {
		return fmt.Errorf("results: writing %s.svg: %w", ch.Name, err)
	}
	// The fonts are not embedded (that would add ~400 kB), so name
	// metric-compatible fallbacks for viewers without Liberation Sans.
	out := bytes.ReplaceAll(buf.Bytes(), []byte("font-family:Liberation Sans;"), []byte(svgFontFamily))
	if _, err := w.Write(out); err != nil {
		return fmt.Errorf("results: writing %s.svg: %w", ch.Name, err)
	}
	return nil
}

// addSeries adds a line (and points, when points is set) in the strategy's
// colour, dashed for the unfenced run of a strategy that also ran fenced.
func (ch *Chart) addSeries(k seriesKey, label string, dashed bool, xys plotter.XYs, points bool, withLegend bool) error {
	line, err := plotter.NewLine(xys)
	if err != nil {
		return fmt.Errorf("results: chart %s, %s: %w", ch.Name, label, err)
	}
	clr := StrategyColor(k.Strategy)
	line.Color = clr
	line.Width = vg.Points(lineWidth)
	if dashed {
		line.Dashes = []vg.Length{vg.Points(6), vg.Points(3)}
	}
	thumbs := []plot.Thumbnailer{line}
	ch.plot.Add(line)
	if points {
		sc, err := plotter.NewScatter(xys)
		if err != nil {
			return fmt.Errorf("results: chart %s, %s: %w", ch.Name, label, err)
		}
		sc.GlyphStyle = draw.GlyphStyle{Color: clr, Radius: vg.Points(glyphSize), Shape: draw.CircleGlyph{}}
		ch.plot.Add(sc)
		thumbs = append(thumbs, sc)
	}
	if withLegend {
		ch.legend.Add(label, thumbs...)
	}
	return nil
}

// chartFloorNs is the lowest latency a chart shows: 1µs, the histograms'
// resolution. Anything faster is drawn at it, which keeps log axes defined
// when a histogram holds zeros.
const chartFloorNs = 1e3

// msOf converts nanoseconds to milliseconds for a log axis, never below
// chartFloorNs.
func msOf(ns float64) float64 { return math.Max(ns, chartFloorNs) / 1e6 }

// logRange widens [lo, hi] (> 0) to whole decades.
func logRange(lo, hi float64) (float64, float64) {
	lo = math.Pow10(int(math.Floor(math.Log10(lo))))
	hi = math.Pow10(int(math.Ceil(math.Log10(hi))))
	if hi <= lo {
		hi = lo * 10
	}
	return lo, hi
}

// logTicks labels the decades of a log axis (and 2× and 5× when it spans
// fewer than three decades); the other integer multiples are unlabelled
// minor ticks.
type logTicks struct{}

// Ticks implements plot.Ticker.
func (logTicks) Ticks(lo, hi float64) []plot.Tick {
	if lo <= 0 || hi <= lo {
		return nil
	}
	dense := math.Log10(hi/lo) < 3
	var ticks []plot.Tick
	for d := math.Floor(math.Log10(lo)); d <= math.Ceil(math.Log10(hi)); d++ {
		dec := math.Pow10(int(d))
		for m := 1; m < 10; m++ {
			v := dec * float64(m)
			if v < lo*(1-1e-9) || v > hi*(1+1e-9) {
				continue
			}
			t := plot.Tick{Value: v}
			if m == 1 || (dense && (m == 2 || m == 5)) {
				t.Label = strconv.FormatFloat(v, 'f', -1, 64)
			}
			ticks = append(ticks, t)
		}
	}
	return ticks
}

// linearTicks labels a linear axis every 1, 2 or 5 × 10^k, whichever
// gives five to ten labels, with unlabelled ticks halfway, and never
// switches to exponent notation.
type linearTicks struct{}

// Ticks implements plot.Ticker.
func (linearTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(hi > lo) {
		return nil
	}
	span := hi - lo
	step := math.Pow10(int(math.Floor(math.Log10(span))))
	for _, m := range []float64{0.1, 0.2, 0.5, 1, 2, 5, 10} {
		if span/(step*m) <= 10 {
			step *= m
			break
		}
	}
	decimals := max(0, int(-math.Floor(math.Log10(step))))
	var ticks []plot.Tick
	for i := math.Ceil(lo / step * 2); i <= math.Floor(hi/step*2); i++ {
		v := i * step / 2
		if v == 0 {
			v = 0 // not -0
		}
		t := plot.Tick{Value: v}
		if math.Mod(i, 2) == 0 {
			t.Label = strconv.FormatFloat(v, 'f', decimals, 64)
		}
		ticks = append(ticks, t)
	}
	return ticks
}

// useLogY puts the y axis on a log scale spanning [lo, hi] in whole
// decades.
func (ch *Chart) useLogY(lo, hi float64) {
	ch.plot.Y.Scale = plot.LogScale{}
	ch.plot.Y.Tick.Marker = logTicks{}
	ch.plot.Y.Min, ch.plot.Y.Max = logRange(lo, hi)
}

// band shades the span [x0, x1] of the x axis over the whole height of the
// plot, like a fault window.
type band struct {
	x0, x1 float64
	color  color.Color
}

// Plot implements plot.Plotter.
func (b band) Plot(c draw.Canvas, p *plot.Plot) {
	trX, _ := p.Transforms(&c)
	x0, x1 := trX(b.x0), trX(b.x1)
	pts := []vg.Point{{X: x0, Y: c.Min.Y}, {X: x1, Y: c.Min.Y}, {X: x1, Y: c.Max.Y}, {X: x0, Y: c.Max.Y}}
	c.FillPolygon(b.color, c.ClipPolygonX(pts))
}

// Thumbnail implements plot.Thumbnailer, for the legend.
func (b band) Thumbnail(c *draw.Canvas) {
	c.FillPolygon(b.color, []vg.Point{
		{X: c.Min.X, Y: c.Min.Y}, {X: c.Max.X, Y: c.Min.Y},
		{X: c.Max.X, Y: c.Max.Y}, {X: c.Min.X, Y: c.Max.Y},
	})
}
