package report

import (
	"fmt"
	"image/color"
	"math"
	"sort"

	"gonum.org/v1/plot/plotter"

	"github.com/lockbench/lockbench/results"
)

// faultBandColor shades the fault window: translucent grey, so the lines
// stay readable through it.
var faultBandColor = color.NRGBA{0x80, 0x80, 0x80, 0x40}

// LatencyTimeline charts, for runs under one fault, the total latency of
// every interval (Params.IntervalNs, 1 s by default) against seconds since
// the start of the run, one line per strategy and trial, with the fault
// window (Summary.FaultWindow) shaded. Each point is the interval's p99 or
// its maximum (see "Charts" in the package doc); an interval without a
// completed payment is a gap. It returns nil when no run has an interval.
func LatencyTimeline(runs []results.Run, fault string) (*Chart, error) {
	runs = append([]results.Run(nil), runs...)
	sort.SliceStable(runs, func(i, j int) bool { return keyOf(&runs[i].Summary).less(keyOf(&runs[j].Summary)) })
	lb := newRunLabeler(runs)
	stat := timelineStat(runs)
	what := "p99"
	if stat == results.StatMax {
		what = "worst (max)"
	}
	ch := newChart("latency-timeline-"+results.Sanitize(fault),
		fmt.Sprintf("Latency over time, fault: %s", fault),
		"seconds since start", what+" total latency per interval (ms, log scale)")
	ch.addGrid()
	ch.Caption = fmt.Sprintf("Each line is one strategy's %s latency interval by interval under the %s fault "+
		"(one line per trial when there were several); the shaded span is when the fault was active (from its earliest start to its latest end over the runs): "+
		"look for spikes in it and for how fast a line recovers after.", what, fault)
	if stat == results.StatMax {
		ch.Caption += fmt.Sprintf(" The intervals hold fewer than the %d deliveries a p99 needs, so the line is each interval's maximum.", results.MinCount(results.StatP99))
	}
	xMax, yLo, yHi := 0.0, math.Inf(1), 0.0
	// One band from the earliest fault start to the latest fault end over
	// all runs, drawn before the lines so that it never hides them (one band
	// per run would stack up into dark patches).
	var span *band
	for _, r := range runs {
		if w := r.Summary.FaultWindow; w != nil && len(timelineSegments(r.Intervals, stat)) > 0 {
			x0, x1 := float64(w.StartNs)/1e9, float64(w.EndNs)/1e9
			if span == nil {
				span = &band{x0, x1, faultBandColor}
			}
			span.x0, span.x1 = math.Min(span.x0, x0), math.Max(span.x1, x1)
			xMax = math.Max(xMax, x1)
		}
	}
	if span != nil {
		ch.plot.Add(*span)
		ch.legend.Add("fault active", *span)
	}
	n := 0
	legend := map[seriesKey]bool{}
	for _, r := range runs {
		segs := timelineSegments(r.Intervals, stat)
		if len(segs) == 0 {
			continue
		}
		k := keyOf(&r.Summary)
		for _, seg := range segs {
			for _, pt := range seg {
				xMax = math.Max(xMax, pt.X)
				yLo, yHi = math.Min(yLo, pt.Y), math.Max(yHi, pt.Y)
			}
			if err := ch.addSeries(k, lb.label(k), lb.split(k) && !k.Fencing, seg, len(seg) == 1, !legend[k]); err != nil {
				return nil, err
			}
			legend[k] = true
		}
		n++
	}
	if n == 0 {
		return nil, nil
	}
	ch.plot.X.Min, ch.plot.X.Max = 0, math.Max(xMax, 1)
	ch.useLogY(yLo, yHi)
	return ch, nil
}

// timelineStat is the statistic the timeline of runs draws: StatP99 when
// every non-empty interval has the samples for it, else StatMax.
func timelineStat(runs []results.Run) string {
	for _, r := range runs {
		for _, iv := range r.Intervals {
			if h := iv.Latencies(results.Total); h != nil && h.TotalCount() > 0 && h.TotalCount() < results.MinCount(results.StatP99) {
				return results.StatMax
			}
		}
	}
	return results.StatP99
}

// timelineSegments turns intervals into runs of consecutive points (x =
// the interval's middle in seconds, y = its stat, StatP99 or StatMax, of
// total latency in ms), split where an interval recorded nothing.
func timelineSegments(ivs []results.Interval, stat string) []plotter.XYs {
	var segs []plotter.XYs
	var cur plotter.XYs
	for _, iv := range ivs {
		h := iv.Latencies(results.Total)
		if h == nil || h.TotalCount() == 0 {
			if len(cur) > 0 {
				segs = append(segs, cur)
				cur = nil
			}
			continue
		}
		x := float64(iv.StartNs+iv.EndNs) / 2 / 1e9
		v := h.Max()
		if stat == results.StatP99 {
			v = h.ValueAtQuantile(99)
		}
		cur = append(cur, plotter.XY{X: x, Y: msOf(float64(v))})
	}
	if len(cur) > 0 {
		segs = append(segs, cur)
	}
	return segs
}
