package report

import (
	"fmt"
	"math"
	"sort"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"

	"github.com/lockbench/lockbench/results"
)

// groupByKey splits ss into series, in legend order.
func groupByKey(ss []results.Summary) ([]seriesKey, map[seriesKey][]results.Summary) {
	g := map[seriesKey][]results.Summary{}
	for _, s := range ss {
		g[keyOf(&s)] = append(g[keyOf(&s)], s)
	}
	return sortedKeys(ss), g
}

// sweepSeries groups one series' runs by x (contenders, or offered rate):
// the trials of each point, in order of x.
func sweepSeries(g []results.Summary, x func(s *results.Summary) float64, y func(s *results.Summary) (float64, bool), measuredX func(s *results.Summary) float64) []trialPoint {
	var pts []trialPoint
	at := map[float64]int{}
	for i := range g {
		s := &g[i]
		xv := x(s)
		j, ok := at[xv]
		if !ok {
			j = len(pts)
			at[xv] = j
			pts = append(pts, trialPoint{x: xv})
		}
		if measuredX != nil {
			pts[j].xs = append(pts[j].xs, measuredX(s))
		}
		if v, ok := y(s); ok {
			pts[j].ys = append(pts[j].ys, v)
		}
	}
	sort.SliceStable(pts, func(i, j int) bool { return pts[i].x < pts[j].x })
	return pts
}

// ThroughputContention charts achieved payments/s against contenders per
// lock key (Params.Contenders), one line per strategy, from the summaries
// of a contention sweep; with several trials per point, the median with
// its interval as an error bar. It returns nil when ss is empty.
func ThroughputContention(ss []results.Summary) (*Chart, error) {
	if len(ss) == 0 {
		return nil, nil
	}
	ch := newChart("throughput-contention", "Throughput against contention",
		"contenders per lock key (instances × workers ÷ accounts)", "payments/s (achieved, log scale)")
	ch.addGrid()
	ch.Caption = "Each line is one strategy as more workers compete for each lock key; " +
		"the higher a line stays as it moves right, the better the strategy copes with contention."
	lb := newLabeler(ss)
	keys, groups := groupByKey(ss)
	xs := map[float64]bool{}
	yMin, yMax := math.Inf(1), 0.0
	var drawn []results.Estimate
	type series struct {
		k      seriesKey
		xys    plotter.XYs
		lo, hi []float64
	}
	var all []series
	for _, k := range keys {
		pts := sweepSeries(groups[k], func(s *results.Summary) float64 { return s.Params.Contenders() },
			func(s *results.Summary) (float64, bool) { return finite(s.PaymentsPerSec), true }, nil)
		sr := series{k: k}
		for _, pt := range pts {
			e := results.EstimateOf(pt.ys)
			drawn = append(drawn, e)
			xs[pt.x] = true
			sr.xys = append(sr.xys, plotter.XY{X: pt.x, Y: e.Median})
			sr.lo, sr.hi = append(sr.lo, e.Lo), append(sr.hi, e.Hi)
			yMax = math.Max(yMax, math.Max(e.Median, e.Hi))
			for _, y := range []float64{e.Median, e.Lo} {
				if y > 0 {
					yMin = math.Min(yMin, y)
				}
			}
		}
		all = append(all, sr)
	}
	// Log scale: the in-process controls run an order of magnitude above
	// the distributed locks, which a linear axis would flatten to the floor.
	if math.IsInf(yMin, 1) {
		yMin = 1
	}
	yMin = math.Max(yMin, 1)
	for _, sr := range all {
		for i := range sr.lo {
			sr.lo[i] = math.Max(sr.lo[i], yMin)
		}
		if err := ch.addErrorBars(sr.k, sr.xys, sr.lo, sr.hi, true); err != nil {
			return nil, err
		}
		if err := ch.addSeries(sr.k, lb.label(sr.k), lb.split(sr.k) && !sr.k.Fencing, sr.xys, true, true); err != nil {
			return nil, err
		}
	}
	ch.Caption += intervalCaption(drawn)
	lo, hi := minMax(xs)
	logX := hi/lo >= 4
	switch {
	case len(xs) <= maxValueTicks:
		ch.plot.X.Tick.Marker = valueTicks(xs)
	case logX:
		ch.plot.X.Tick.Marker = logTicks{}
	}
	if logX {
		ch.plot.X.Scale = plot.LogScale{}
		ch.plot.X.Min, ch.plot.X.Max = lo/1.15, hi*1.15
	} else {
		pad := math.Max((hi-lo)*0.05, 0.5)
		ch.plot.X.Min, ch.plot.X.Max = math.Max(0, lo-pad), hi+pad
	}
	ch.useLogY(yMin, math.Max(yMax, 10))
	return ch, nil
}

// LatencyThroughput charts p99 total latency (ms, log scale) against
// achieved payments/s, one line per strategy through the points of a rate
// sweep in order of offered rate (Params.Rate): the trade-off curve, whose
// knee is the most load the strategy takes before latency runs away. A
// point whose runs have too few samples for a p99 (Latency.Has) is left
// out; with several trials per point, it is drawn at the medians with
// error bars for both. It returns nil when no summary reports a p99 total
// latency.
func LatencyThroughput(ss []results.Summary) (*Chart, error) {
	var have []results.Summary
	short := 0
	for _, s := range ss {
		switch l := s.Latency["total"]; {
		case l.Has(results.StatP99):
			have = append(have, s)
		case l.Count > 0:
			short++
		}
	}
	if len(have) == 0 {
		return nil, nil
	}
	ch := newChart("latency-throughput", "Latency against throughput (rate sweep)",
		"payments/s (achieved)", "p99 total latency (ms, log scale)")
	ch.addGrid()
	ch.Caption = "Each point is one offered rate; a line runs flat, then turns up at its knee: " +
		"size for throughput left of the knee, and a line further right and lower is better."
	lb := newLabeler(have)
	keys, groups := groupByKey(have)
	xMax, yLo, yHi := 0.0, math.Inf(1), 0.0
	var drawn []results.Estimate
	for _, k := range keys {
		pts := sweepSeries(groups[k], func(s *results.Summary) float64 { return s.Params.Rate },
			func(s *results.Summary) (float64, bool) {
				v, ok := s.Latency["total"].Value(results.StatP99)
				return msOf(float64(v)), ok
			},
			func(s *results.Summary) float64 { return finite(s.PaymentsPerSec) })
		var xys plotter.XYs
		var ylo, yhi, xlo, xhi []float64
		for _, pt := range pts {
			ey, ex := results.EstimateOf(pt.ys), results.EstimateOf(pt.xs)
			drawn = append(drawn, ey, ex)
			xys = append(xys, plotter.XY{X: ex.Median, Y: ey.Median})
			ylo, yhi, xlo, xhi = append(ylo, ey.Lo), append(yhi, ey.Hi), append(xlo, ex.Lo), append(xhi, ex.Hi)
			xMax = math.Max(xMax, math.Max(ex.Median, ex.Hi))
			yLo, yHi = math.Min(yLo, math.Min(ey.Median, ey.Lo)), math.Max(yHi, math.Max(ey.Median, ey.Hi))
		}
		if err := ch.addErrorBars(k, xys, ylo, yhi, true); err != nil {
			return nil, err
		}
		if err := ch.addErrorBars(k, xys, xlo, xhi, false); err != nil {
			return nil, err
		}
		if err := ch.addSeries(k, lb.label(k), lb.split(k) && !k.Fencing, xys, true, true); err != nil {
			return nil, err
		}
	}
	ch.Caption += intervalCaption(drawn)
	if short > 0 {
		ch.Caption += fmt.Sprintf(" %d runs with fewer than %d deliveries (too few for a p99) are left out.", short, results.MinCount(results.StatP99))
	}
	ch.plot.X.Min, ch.plot.X.Max = 0, math.Max(xMax*1.05, 1)
	ch.useLogY(yLo, yHi)
	return ch, nil
}

// maxValueTicks is the most x values labelled one by one; beyond it their
// labels would collide.
const maxValueTicks = 10

// valueTicks labels exactly the given x values.
func valueTicks(xs map[float64]bool) plot.ConstantTicks {
	var ticks plot.ConstantTicks
	for x := range xs {
		ticks = append(ticks, plot.Tick{Value: x, Label: strconv.FormatFloat(x, 'g', 4, 64)})
	}
	sort.Slice(ticks, func(i, j int) bool { return ticks[i].Value < ticks[j].Value })
	return ticks
}

func minMax(xs map[float64]bool) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for x := range xs {
		lo, hi = math.Min(lo, x), math.Max(hi, x)
	}
	return lo, hi
}

// finite maps NaN and ±Inf to 0, which gonum/plot refuses.
func finite(v float64) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	return v
}
