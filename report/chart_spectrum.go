package report

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"

	"github.com/lockbench/lockbench/results"
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
// line per series (a strategy), from the runs' whole-run histograms: x is
// the percentile on HdrHistogram's 1/(1−p) log scale, y the latency in ms
// on a log scale. A line stops at the deepest percentile with at least
// MinTailSamples samples beyond it. When a series ran several trials, its
// line is the median over them at each percentile and a band in its
// colour spans the trials' lowest to highest, up to the deepest percentile
// every trial supports. It returns nil when no run recorded phase p.
func LatencySpectrum(runs []results.Run, p results.Phase) (*Chart, error) {
	runs = append([]results.Run(nil), runs...)
	sort.SliceStable(runs, func(i, j int) bool { return keyOf(&runs[i].Summary).less(keyOf(&runs[j].Summary)) })
	lb := newRunLabeler(runs)
	ch := newChart("latency-spectrum-"+p.String(),
		fmt.Sprintf("%s latency by percentile", titleCase(p.String())),
		"percentile (log scale of 1/(1−p))", "latency (ms, log scale)")
	ch.addGrid()
	ch.Caption = fmt.Sprintf("Each line is one strategy's %s latency at every percentile of the whole run; "+
		"the x axis stretches the tail (each step right is ten times rarer), so lower and flatter is better. "+
		"A line ends where fewer than %d samples lie beyond the percentile.", p, results.MinTailSamples)
	var keys []seriesKey
	byKey := map[seriesKey][]results.Latencies{}
	for _, r := range runs {
		h := r.Latencies(p)
		if h == nil || h.TotalCount() < results.MinCount(results.StatP50) {
			continue
		}
		k := keyOf(&r.Summary)
		if _, ok := byKey[k]; !ok {
			keys = append(keys, k)
		}
		byKey[k] = append(byKey[k], h)
	}
	xMax, yLo, yHi := 1.0, math.Inf(1), 0.0
	trials := false
	for _, k := range keys {
		xs, mid, lo, hi := spectrumTrials(byKey[k])
		for i, x := range xs {
			xMax = math.Max(xMax, x)
			yLo, yHi = math.Min(yLo, lo[i]), math.Max(yHi, hi[i])
		}
		if len(byKey[k]) > 1 {
			trials = true
			if err := ch.addBand(k, xs, lo, hi); err != nil {
				return nil, err
			}
		}
		xys := make(plotter.XYs, len(xs))
		for i := range xs {
			xys[i] = plotter.XY{X: xs[i], Y: mid[i]}
		}
		if err := ch.addSeries(k, lb.label(k), lb.split(k) && !k.Fencing, xys, false, true); err != nil {
			return nil, err
		}
	}
	if len(keys) == 0 {
		return nil, nil
	}
	if trials {
		ch.Caption += " With several trials the line is their median and the shaded band their range."
	}
	ch.plot.X.Scale = plot.LogScale{}
	ch.plot.X.Tick.Marker = percentileTicks
	ch.plot.X.Min, ch.plot.X.Max = 1, math.Max(xMax, 10)
	ch.useLogY(yLo, yHi)
	return ch, nil
}

// spectrumPoints samples h at percentiles evenly spaced on the 1/(1−p)
// scale, up to the deepest percentile with MinTailSamples samples beyond
// it: x is 1/(1−p), y the latency in ms.
func spectrumPoints(h results.Latencies) plotter.XYs {
	xs, ys, _, _ := spectrumTrials([]results.Latencies{h})
	xys := make(plotter.XYs, len(xs))
	for i := range xs {
		xys[i] = plotter.XY{X: xs[i], Y: ys[i]}
	}
	return xys
}

// spectrumTrials samples the histograms hs (one per trial) at percentiles
// evenly spaced on the 1/(1−p) scale, up to the deepest percentile every
// one of them has MinTailSamples samples beyond, and returns for each x
// the median, lowest and highest latency over them, in ms.
func spectrumTrials(hs []results.Latencies) (xs, mid, lo, hi []float64) {
	last := spectrumMaxX
	for _, h := range hs {
		last = math.Min(last, float64(h.TotalCount())/results.MinTailSamples)
	}
	vals := make([]float64, len(hs))
	for i := 0; ; i++ {
		x := math.Pow(10, float64(i)/spectrumStepsPerDecade)
		if x > last*(1+1e-9) {
			break
		}
		q := 100 * (1 - 1/x)
		for j, h := range hs {
			vals[j] = msOf(float64(h.ValueAtQuantile(q)))
		}
		e := results.EstimateOf(vals)
		xs, mid = append(xs, x), append(mid, e.Median)
		lo, hi = append(lo, slices.Min(vals)), append(hi, slices.Max(vals))
	}
	return xs, mid, lo, hi
}

func titleCase(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
