package results

import (
	"fmt"
	"image/color"
	"math"
	"sort"

	"gonum.org/v1/plot/plotter"
)

// faultBandColor shades the fault window: translucent grey, so the lines
// stay readable through it.
var faultBandColor = color.NRGBA{0x80, 0x80, 0x80, 0x40}

// LatencyTimeline charts, for runs under one fault, the p99 total latency
// of every interval (1 s by default) against seconds since the start of
// the run, one line per strategy, with the fault window
// (Summary.FaultWindow) shaded. Intervals without a completed payment
// leave a gap in their line. It returns nil when no run has a recorded
// interval.
func LatencyTimeline(runs []Run, fault string) (*Chart, error) {
	runs = append([]Run(nil), runs...)
	sort.SliceStable(runs, func(i, j int) bool { return keyOf(&runs[i].Summary).less(keyOf(&runs[j].Summary)) })
	lb := newRunLabeler(runs)
	ch := newChart("latency-timeline-"+sanitize(fault),
		fmt.Sprintf("p99 latency over time, fault: %s", fault),
		"seconds since start", "p99 total latency per interval (ms, log scale)")
	ch.addGrid()
	ch.Caption = fmt.Sprintf("Each line is one strategy's p99 latency second by second under the %s fault; "+
		"the shaded span is when the fault was active (from its earliest start to its latest end over the runs): look for spikes in it and for how fast a line recovers after.", fault)
	xMax, yLo, yHi := 0.0, math.Inf(1), 0.0
	// One band from the earliest fault start to the latest fault end over
	// all runs, drawn before the lines so that it never hides them (one band
	// per run would stack up into dark patches).
	var span *band
	for _, r := range runs {
		if w := r.Summary.FaultWindow; w != nil && len(timelineSegments(r.Intervals)) > 0 {
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
	for _, r := range runs {
		segs := timelineSegments(r.Intervals)
		if len(segs) == 0 {
			continue
		}
		k := keyOf(&r.Summary)
		for i, seg := range segs {
			for _, pt := range seg {
				xMax = math.Max(xMax, pt.X)
				yLo, yHi = math.Min(yLo, pt.Y), math.Max(yHi, pt.Y)
			}
			if err := ch.addSeries(k, lb.label(k), lb.split(k) && !k.Fencing, seg, len(seg) == 1, i == 0); err != nil {
				return nil, err
			}
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

// timelineSegments turns intervals into runs of consecutive points (x =
// the interval's middle in seconds, y = p99 total in ms), split where an
// interval recorded nothing.
func timelineSegments(ivs []Interval) []plotter.XYs {
	var segs []plotter.XYs
	var cur plotter.XYs
	for _, iv := range ivs {
		h := iv.Hists[Total]
		if h == nil || h.TotalCount() == 0 {
			if len(cur) > 0 {
				segs = append(segs, cur)
				cur = nil
			}
			continue
		}
		x := float64(iv.StartNs+iv.EndNs) / 2 / 1e9
		cur = append(cur, plotter.XY{X: x, Y: msOf(float64(h.ValueAtQuantile(99)))})
	}
	if len(cur) > 0 {
		segs = append(segs, cur)
	}
	return segs
}
