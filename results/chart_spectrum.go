package results

import (
	"fmt"
	"math"
	"sort"
	"strings"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
)

// Spectrum sampling: points per decade of 1/(1−p), and the deepest
// percentile drawn (99.9999%) whatever the sample count.
const (
	spectrumStepsPerDecade = 40
	spectrumMaxX           = 1e6
)

// percentileTicks label the 1/(1−p) axis in percentiles, as
// HdrHistogram's plotter does.
var percentileTicks = plot.ConstantTicks{
	{Value: 1, Label: "0%"},
	{Value: 2, Label: "50%"},
	{Value: 10, Label: "90%"},
	{Value: 100, Label: "99%"},
	{Value: 1e3, Label: "99.9%"},
	{Value: 1e4, Label: "99.99%"},
	{Value: 1e5, Label: "99.999%"},
	{Value: 1e6, Label: "99.9999%"},
}

// LatencySpectrum charts the latency of phase p at every percentile, one
// line per run (a strategy), from the runs' whole-run histograms: x is the
// percentile on HdrHistogram's 1/(1−p) log scale, y the latency in ms on a
// log scale. It returns nil when no run recorded phase p.
func LatencySpectrum(runs []Run, p Phase) (*Chart, error) {
	runs = append([]Run(nil), runs...)
	sort.SliceStable(runs, func(i, j int) bool { return keyOf(&runs[i].Summary).less(keyOf(&runs[j].Summary)) })
	lb := newRunLabeler(runs)
	ch := newChart("latency-spectrum-"+p.String(),
		fmt.Sprintf("%s latency by percentile", titleCase(p.String())),
		"percentile (log scale of 1/(1−p))", "latency (ms, log scale)")
	ch.addGrid()
	ch.Caption = fmt.Sprintf("Each line is one strategy's %s latency at every percentile of the whole run; "+
		"the x axis stretches the tail (each step right is ten times rarer), so lower and flatter is better.", p)
	xMax, yLo, yHi := 1.0, math.Inf(1), 0.0
	n := 0
	for _, r := range runs {
		h := r.Total[p]
		if h == nil || h.TotalCount() == 0 {
			continue
		}
		xys := spectrumPoints(h)
		for _, pt := range xys {
			xMax = math.Max(xMax, pt.X)
			yLo, yHi = math.Min(yLo, pt.Y), math.Max(yHi, pt.Y)
		}
		k := keyOf(&r.Summary)
		if err := ch.addSeries(k, lb.label(k), lb.split(k) && !k.Fencing, xys, false, true); err != nil {
			return nil, err
		}
		n++
	}
	if n == 0 {
		return nil, nil
	}
	ch.plot.X.Scale = plot.LogScale{}
	ch.plot.X.Tick.Marker = percentileTicks
	ch.plot.X.Min, ch.plot.X.Max = 1, math.Max(xMax, 10)
	ch.useLogY(yLo, yHi)
	return ch, nil
}

// spectrumPoints samples h at percentiles evenly spaced on the 1/(1−p)
// scale, up to the deepest percentile its sample count supports, ending at
// its maximum.
func spectrumPoints(h *hdrhistogram.Histogram) plotter.XYs {
	last := math.Min(float64(h.TotalCount()), spectrumMaxX)
	var xys plotter.XYs
	for i := 0; ; i++ {
		x := math.Pow(10, float64(i)/spectrumStepsPerDecade)
		if x >= last {
			break
		}
		q := 100 * (1 - 1/x)
		xys = append(xys, plotter.XY{X: x, Y: msOf(float64(h.ValueAtQuantile(q)))})
	}
	return append(xys, plotter.XY{X: math.Max(last, 1), Y: msOf(float64(h.Max()))})
}

func titleCase(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
