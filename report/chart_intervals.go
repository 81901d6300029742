package report

import (
	"fmt"
	"image/color"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/lockbench/lockbench/results"
)

// Intervals in charts: a figure over several trials is drawn at its median
// with error bars (points) or a band (lines) spanning its interval, the
// same Estimate the tables print.

// bandAlpha is the opacity of a trials band in its strategy's colour.
const bandAlpha = 0x38

// addBand shades, in k's colour, the area between lo and hi over xs.
func (ch *Chart) addBand(k seriesKey, xs, lo, hi []float64) error {
	if len(xs) < 2 {
		return nil
	}
	pts := make(plotter.XYs, 0, 2*len(xs))
	for i := range xs {
		pts = append(pts, plotter.XY{X: xs[i], Y: hi[i]})
	}
	for i := len(xs) - 1; i >= 0; i-- {
		pts = append(pts, plotter.XY{X: xs[i], Y: lo[i]})
	}
	poly, err := plotter.NewPolygon(pts)
	if err != nil {
		return fmt.Errorf("results: chart %s, band: %w", ch.Name, err)
	}
	poly.Color = translucent(StrategyColor(k.Strategy), bandAlpha)
	poly.LineStyle.Width = 0
	ch.plot.Add(poly)
	return nil
}

func translucent(c color.Color, a uint8) color.Color {
	r, g, b, _ := c.RGBA()
	return color.NRGBA{uint8(r >> 8), uint8(g >> 8), uint8(b >> 8), a}
}

// errorPoints are points with an interval around each, in x or y.
type errorPoints struct {
	plotter.XYs
	lo, hi []float64 // the interval's bounds, absolute
}

// YError implements plotter.YErrorer: the distances below and above.
func (e errorPoints) YError(i int) (float64, float64) {
	return e.XYs[i].Y - e.lo[i], e.hi[i] - e.XYs[i].Y
}

// XError implements plotter.XErrorer.
func (e errorPoints) XError(i int) (float64, float64) {
	return e.XYs[i].X - e.lo[i], e.hi[i] - e.XYs[i].X
}

// addErrorBars draws, in k's colour, a bar from lo to hi through each
// point of xys: vertical (y intervals) or horizontal. Points whose interval
// is empty (one trial) get none.
func (ch *Chart) addErrorBars(k seriesKey, xys plotter.XYs, lo, hi []float64, vertical bool) error {
	var e errorPoints
	for i := range xys {
		if hi[i] > lo[i] {
			e.XYs = append(e.XYs, xys[i])
			e.lo, e.hi = append(e.lo, lo[i]), append(e.hi, hi[i])
		}
	}
	if len(e.XYs) == 0 {
		return nil
	}
	clr := StrategyColor(k.Strategy)
	if vertical {
		bars, err := plotter.NewYErrorBars(e)
		if err != nil {
			return fmt.Errorf("results: chart %s, error bars: %w", ch.Name, err)
		}
		bars.LineStyle.Color, bars.LineStyle.Width, bars.CapWidth = clr, vg.Points(1.5), vg.Points(6)
		ch.plot.Add(bars)
		return nil
	}
	bars, err := plotter.NewXErrorBars(e)
	if err != nil {
		return fmt.Errorf("results: chart %s, error bars: %w", ch.Name, err)
	}
	bars.LineStyle.Color, bars.LineStyle.Width, bars.CapWidth = clr, vg.Points(1.5), vg.Points(6)
	ch.plot.Add(bars)
	return nil
}

// trialPoint is one x of a series with the trials' values there.
type trialPoint struct {
	x  float64
	ys []float64
	// xs are the trials' x values where x itself is measured (achieved
	// throughput).
	xs []float64
}

// intervalCaption says what the error bars of a chart are, for its
// caption, from the estimates drawn: "" when no point had more than one
// trial.
func intervalCaption(es []results.Estimate) string {
	ci, rng := false, false
	for _, e := range es {
		ci, rng = ci || e.CI, rng || (!e.CI && e.N > 1)
	}
	switch {
	case ci && rng:
		return fmt.Sprintf(" Points are medians over trials; bars are 95%% confidence intervals (%d trials or more) or the range of fewer.", results.MinTrialsForCI)
	case ci:
		return " Points are medians over trials; bars are their 95% confidence intervals."
	case rng:
		return fmt.Sprintf(" Points are medians over trials; bars are the range of the trials (fewer than %d: no confidence interval).", results.MinTrialsForCI)
	}
	return ""
}
