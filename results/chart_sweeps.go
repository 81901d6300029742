package results

import (
	"math"
	"sort"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
)

// groupByKey splits ss into series, in legend order.
func groupByKey(ss []Summary) ([]seriesKey, map[seriesKey][]Summary) {
	g := map[seriesKey][]Summary{}
	for _, s := range ss {
		g[keyOf(&s)] = append(g[keyOf(&s)], s)
	}
	return sortedKeys(ss), g
}

// ThroughputContention charts achieved payments/s against contenders per
// lock key (Params.Contenders), one line per strategy, from the summaries
// of a contention sweep. It returns nil when ss is empty.
func ThroughputContention(ss []Summary) (*Chart, error) {
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
	for _, k := range keys {
		g := groups[k]
		sort.SliceStable(g, func(i, j int) bool { return g[i].Params.Contenders() < g[j].Params.Contenders() })
		xys := make(plotter.XYs, 0, len(g))
		for _, s := range g {
			x := s.Params.Contenders()
			xs[x] = true
			xys = append(xys, plotter.XY{X: x, Y: finite(s.PaymentsPerSec)})
			yMax = math.Max(yMax, finite(s.PaymentsPerSec))
			if y := finite(s.PaymentsPerSec); y > 0 {
				yMin = math.Min(yMin, y)
			}
		}
		if err := ch.addSeries(k, lb.label(k), lb.split(k) && !k.Fencing, xys, true, true); err != nil {
			return nil, err
		}
	}
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
	// Log scale: the in-process controls run an order of magnitude above
	// the distributed locks, which a linear axis would flatten to the floor.
	if math.IsInf(yMin, 1) {
		yMin = 1
	}
	ch.useLogY(math.Max(yMin, 1), math.Max(yMax, 10))
	return ch, nil
}

// LatencyThroughput charts p99 total latency (ms, log scale) against
// achieved payments/s, one line per strategy through the points of a rate
// sweep in order of offered rate (Params.Rate): the trade-off curve, whose
// knee is the most load the strategy takes before latency runs away. It
// returns nil when no summary has total latency.
func LatencyThroughput(ss []Summary) (*Chart, error) {
	var have []Summary
	for _, s := range ss {
		if s.Latency["total"].Count > 0 {
			have = append(have, s)
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
	for _, k := range keys {
		g := groups[k]
		sort.SliceStable(g, func(i, j int) bool { return g[i].Params.Rate < g[j].Params.Rate })
		xys := make(plotter.XYs, 0, len(g))
		for _, s := range g {
			y := msOf(float64(s.Latency["total"].P99))
			x := finite(s.PaymentsPerSec)
			xys = append(xys, plotter.XY{X: x, Y: y})
			xMax, yLo, yHi = math.Max(xMax, x), math.Min(yLo, y), math.Max(yHi, y)
		}
		if err := ch.addSeries(k, lb.label(k), lb.split(k) && !k.Fencing, xys, true, true); err != nil {
			return nil, err
		}
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
