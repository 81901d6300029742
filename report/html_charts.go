package report

import (
	"fmt"
	"math"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/lockbench/lockbench/results"
)

// The data of report.html's interactive charts: for each chart BuildCharts
// draws as a PNG, the same series, as numbers the page plots with uPlot.
// Each builder picks its runs as the PNG chart does (BuildCharts), so the
// two show the same thing; a chart no builder knows is shown in report.html
// as its PNG.

// The kinds of interactive chart.
const (
	htmlKindLines = "lines" // series of (x, y) points, on uPlot
	htmlKindGrid  = "grid"  // the safety grid: cells, drawn as a table
)

// Axis units tell the page how to format a value for the hover readout.
const (
	unitMs         = "ms"         // latency in milliseconds
	unitRate       = "rate"       // payments per second
	unitPercentile = "percentile" // 1/(1−p): shown as the percentile p
	unitSeconds    = "s"          // seconds since the start of the run
	unitCount      = "count"      // a plain number (contenders)
)

// maxTimelinePoints is the most points a latency timeline keeps per
// series: longer runs merge neighbouring intervals (their histograms, so
// each point is still an exact p99 of its span) to keep report.html small
// enough to mail. A 20-minute soak keeps every second.
const maxTimelinePoints = 1200

// htmlChart is one interactive chart of report.html.
type htmlChart struct {
	Name    string       `json:"name"`
	Title   string       `json:"title"`
	Caption string       `json:"caption"`
	Kind    string       `json:"kind"`
	X       htmlAxis     `json:"x"`
	Y       htmlAxis     `json:"y"`
	Series  []htmlSeries `json:"series,omitempty"`
	// Band is the shaded fault window of a timeline.
	Band *htmlBand `json:"band,omitempty"`
	// Note, when set, says how the page's chart differs from the PNG's.
	Note string `json:"-"`
	// Grid is the safety grid's cells (Kind htmlKindGrid).
	Grid *htmlGrid `json:"-"`
	// PNG and SVG link the static chart, relative to report.html.
	PNG, SVG string `json:"-"`
	// Static is set for a chart without interactive data: the page shows
	// its PNG.
	Static bool `json:"-"`
}

// htmlAxis is an axis: its label, scale and unit.
type htmlAxis struct {
	Label string `json:"label"`
	Log   bool   `json:"log"`
	Unit  string `json:"unit"`
	// Ticks, when set, are the only labelled ticks (the percentile axis).
	Ticks []htmlTick `json:"ticks,omitempty"`
}

type htmlTick struct {
	V     num    `json:"v"`
	Label string `json:"label"`
}

// htmlSeries is one line. Y holds null where the line has a gap. YLo/YHi
// (and XLo/XHi) are the interval of each point over trials, present only
// when some point has more than one trial; N is the trials behind each
// point, and Spread names its interval ("range" or "95% CI", Estimate).
type htmlSeries struct {
	Label    string   `json:"label"`
	Strategy string   `json:"strategy"`
	Color    string   `json:"color"`
	Dashed   bool     `json:"dashed,omitempty"`
	Points   bool     `json:"points,omitempty"`
	X        []num    `json:"x"`
	Y        []num    `json:"y"`
	YLo      []num    `json:"ylo,omitempty"`
	YHi      []num    `json:"yhi,omitempty"`
	XLo      []num    `json:"xlo,omitempty"`
	XHi      []num    `json:"xhi,omitempty"`
	N        []int    `json:"n,omitempty"`
	Spread   []string `json:"spread,omitempty"`
	// Tags, when set, say more about each point in its hover readout
	// ("offered 2000/s").
	Tags []string `json:"tags,omitempty"`
	// Only, when set, are the only points drawn as dots (Points): a line's
	// lone values between gaps.
	Only []int `json:"only,omitempty"`
}

// htmlBand is a shaded span of the x axis.
type htmlBand struct {
	X0    num    `json:"x0"`
	X1    num    `json:"x1"`
	Label string `json:"label"`
}

// num is a chart value in JSON: six significant digits (more than any
// chart resolves, and a third of the bytes of a full float), null for NaN
// and ±Inf, which JSON cannot hold and the page draws as a gap.
type num float64

// MarshalJSON implements json.Marshaler.
func (v num) MarshalJSON() ([]byte, error) {
	f := float64(v)
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return []byte("null"), nil
	}
	return strconv.AppendFloat(nil, f, 'g', 6, 64), nil
}

// noValue is a missing value: a gap in a line.
var noValue = num(math.NaN())

// cssColor is a strategy's chart colour as CSS.
func cssColor(strategy string) string {
	c := StrategyColor(strategy)
	return fmt.Sprintf("#%02x%02x%02x", c.R, c.G, c.B)
}

// htmlCharts returns the interactive charts for the charts of cs, in its
// order, from runs (the runs cs was built from), but for the safety grid,
// which opens the page instead (htmlGlance). A chart of cs that no
// builder here knows comes back Static.
func htmlCharts(runs []results.Run, cs ChartSet, l results.Layout) []htmlChart {
	ss := results.SummariesOf(runs)
	var out []htmlChart
	for _, ch := range cs.Charts {
		var hc *htmlChart
		switch {
		case ch.Name == "latency-spectrum-"+results.Acquire.String():
			hc = htmlSpectrum(runs, results.Acquire)
		case ch.Name == "latency-spectrum-"+results.Total.String():
			hc = htmlSpectrum(runs, results.Total)
		case ch.Name == "throughput-contention":
			hc = htmlContention(sweepSummaries(ss, results.ScenarioContention))
		case ch.Name == "latency-throughput":
			hc = htmlLatencyThroughput(sweepSummaries(ss, results.ScenarioSweep))
		case ch.Name == safetyGridName:
			continue // it opens the page (htmlGlance)
		case strings.HasPrefix(ch.Name, "latency-timeline-"):
			faults, byFault := faultRunsWithIntervals(runs)
			for _, f := range faults {
				if ch.Name == "latency-timeline-"+results.Sanitize(f) {
					hc = htmlTimeline(byFault[f])
				}
			}
		}
		if hc == nil || (hc.Kind == htmlKindLines && len(hc.Series) == 0) {
			hc = &htmlChart{Static: true}
		}
		hc.Name, hc.Title, hc.Caption = ch.Name, ch.Title, ch.Caption
		file := path.Join(l.Charts, ch.Name) // a link: slashes on every OS
		hc.PNG, hc.SVG = file+".png", file+".svg"
		out = append(out, *hc)
	}
	return out
}

// newSeries starts the series of key k.
func newSeries(k seriesKey, lb labeler, points bool) htmlSeries {
	return htmlSeries{
		Label: lb.label(k), Strategy: k.Strategy, Color: cssColor(k.Strategy),
		Dashed: lb.split(k) && !k.Fencing, Points: points,
	}
}

// percentileAxisTicks label the 1/(1−p) axis in percentiles, as the PNG
// chart does (percentileTicks).
func percentileAxisTicks() []htmlTick {
	out := make([]htmlTick, len(percentileTicks))
	for i, t := range percentileTicks {
		out[i] = htmlTick{V: num(t.Value), Label: t.Label}
	}
	return out
}

// The names of an interval, as the hover readout shows them.
const (
	spreadRange = "range"
	spreadCI95  = "95% CI"
)

// addEstimates sets s.Y to the estimates' medians and, when any of them is
// over more than one trial, YLo/YHi, N and Spread.
func (s *htmlSeries) addEstimates(es []results.Estimate) {
	multi := false
	for _, e := range es {
		multi = multi || e.N > 1
	}
	for _, e := range es {
		if !e.OK() {
			s.Y = append(s.Y, noValue)
		} else {
			s.Y = append(s.Y, num(e.Median))
		}
		if !multi {
			continue
		}
		kind := spreadRange
		if e.CI {
			kind = spreadCI95
		}
		lo, hi := noValue, noValue
		if e.N > 1 {
			lo, hi = num(e.Lo), num(e.Hi)
		}
		s.YLo, s.YHi = append(s.YLo, lo), append(s.YHi, hi)
		s.N, s.Spread = append(s.N, e.N), append(s.Spread, kind)
	}
}

// htmlSpectrum is LatencySpectrum's data for phase p: the runs it charts
// (spectrumRuns), one series per strategy; over several trials, the median
// at each percentile with the trials' range.
func htmlSpectrum(runs []results.Run, p results.Phase) *htmlChart {
	runs = spectrumRuns(runs)
	lb := newRunLabeler(runs)
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
	if len(keys) == 0 {
		return nil
	}
	sort.SliceStable(keys, func(i, j int) bool { return keys[i].less(keys[j]) })
	ch := &htmlChart{
		Kind: htmlKindLines,
		X:    htmlAxis{Label: "percentile (log scale of 1/(1−p))", Log: true, Unit: unitPercentile, Ticks: percentileAxisTicks()},
		Y:    htmlAxis{Label: p.String() + " latency (ms, log scale)", Log: true, Unit: unitMs},
	}
	for _, k := range keys {
		hs := byKey[k]
		xs, mid, lo, hi := spectrumTrials(hs)
		s := newSeries(k, lb, false)
		for i := range xs {
			s.X, s.Y = append(s.X, num(xs[i])), append(s.Y, num(mid[i]))
			if len(hs) > 1 {
				s.YLo, s.YHi = append(s.YLo, num(lo[i])), append(s.YHi, num(hi[i]))
				s.N, s.Spread = append(s.N, len(hs)), append(s.Spread, spreadRange)
			}
		}
		ch.Series = append(ch.Series, s)
	}
	return ch
}

// htmlContention is ThroughputContention's data: payments/s against
// contenders per key, each point the Estimate over its trials.
func htmlContention(ss []results.Summary) *htmlChart {
	if len(ss) == 0 {
		return nil
	}
	ch := &htmlChart{
		Kind: htmlKindLines,
		X:    htmlAxis{Label: "contenders per lock key (instances × workers ÷ accounts)", Unit: unitCount},
		Y:    htmlAxis{Label: "payments/s (achieved, log scale)", Log: true, Unit: unitRate},
	}
	lb := newLabeler(ss)
	keys, groups := groupByKey(ss)
	xs := map[float64]bool{}
	for _, k := range keys {
		pts := sweepSeries(groups[k], func(s *results.Summary) float64 { return s.Params.Contenders() },
			func(s *results.Summary) (float64, bool) { return s.PaymentsPerSec, s.PaymentsPerSec > 0 }, nil)
		s := newSeries(k, lb, true)
		var es []results.Estimate
		for _, pt := range pts {
			xs[pt.x] = true
			s.X = append(s.X, num(pt.x))
			es = append(es, results.EstimateOf(pt.ys))
		}
		s.addEstimates(es)
		ch.Series = append(ch.Series, s)
	}
	if lo, hi := minMax(xs); hi/lo >= 4 {
		ch.X.Log = true
	}
	return ch
}

// htmlLatencyThroughput is LatencyThroughput's data: p99 total latency
// against achieved payments/s, one point per offered rate, each the
// Estimate over its trials on both axes. Runs too short for a p99
// (Latency.Has) are left out, as in the PNG.
func htmlLatencyThroughput(ss []results.Summary) *htmlChart {
	var have []results.Summary
	for _, s := range ss {
		if s.Latency["total"].Has(results.StatP99) {
			have = append(have, s)
		}
	}
	if len(have) == 0 {
		return nil
	}
	ch := &htmlChart{
		Kind: htmlKindLines,
		X:    htmlAxis{Label: "payments/s (achieved)", Unit: unitRate},
		Y:    htmlAxis{Label: "p99 total latency (ms, log scale)", Log: true, Unit: unitMs},
	}
	lb := newLabeler(have)
	keys, groups := groupByKey(have)
	for _, k := range keys {
		pts := sweepSeries(groups[k], func(s *results.Summary) float64 { return s.Params.Rate },
			func(s *results.Summary) (float64, bool) {
				v, ok := s.Latency["total"].Value(results.StatP99)
				return msOf(float64(v)), ok
			},
			func(s *results.Summary) float64 { return finite(s.PaymentsPerSec) })
		s := newSeries(k, lb, true)
		var es []results.Estimate
		var xlo, xhi []num
		multi := false
		for _, pt := range pts {
			ex := results.EstimateOf(pt.xs)
			multi = multi || ex.N > 1
			s.X = append(s.X, num(ex.Median))
			xlo, xhi = append(xlo, num(ex.Lo)), append(xhi, num(ex.Hi))
			s.Tags = append(s.Tags, "offered "+fmtRate(pt.x)+"/s")
			es = append(es, results.EstimateOf(pt.ys))
		}
		s.addEstimates(es)
		if multi {
			s.XLo, s.XHi = xlo, xhi
		}
		s.X = distinctXs(s.X)
		ch.Series = append(ch.Series, s)
	}
	// uPlot draws a line in the order of x: past its knee, where the
	// achieved rate can fall as the offered rate rises, the line joins the
	// points by throughput rather than by offered rate (the PNG's order);
	// each point's hover names its offered rate.
	return ch
}

// htmlTimeline is LatencyTimeline's data for runs under one fault: the
// latency of each interval, p99 or, when intervals are too short for one,
// their maximum (timelineStat), for the first trial of each strategy, with
// the fault window shaded.
func htmlTimeline(runs []results.Run) *htmlChart {
	runs = append([]results.Run(nil), runs...)
	sort.SliceStable(runs, func(i, j int) bool {
		ki, kj := keyOf(&runs[i].Summary), keyOf(&runs[j].Summary)
		if ki != kj {
			return ki.less(kj)
		}
		return runs[i].Summary.Trial < runs[j].Summary.Trial
	})
	lb := newRunLabeler(runs)
	stat := timelineStat(runs)
	what := "p99"
	if stat == results.StatMax {
		what = "worst (max)"
	}
	ch := &htmlChart{
		Kind: htmlKindLines,
		X:    htmlAxis{Label: "seconds since start", Unit: unitSeconds},
		Y:    htmlAxis{Label: what + " total latency per interval (ms, log scale)", Log: true, Unit: unitMs},
	}
	seen := map[seriesKey]bool{}
	for _, r := range runs {
		k := keyOf(&r.Summary)
		if seen[k] || len(r.Intervals) == 0 {
			if seen[k] {
				ch.Note = "This page draws each strategy's first trial (the PNG draws every trial)."
			}
			continue
		}
		seen[k] = true
		s := newSeries(k, lb, false)
		for _, iv := range downsampleIntervals(r.Intervals, maxTimelinePoints) {
			s.X = append(s.X, num(float64(iv.StartNs+iv.EndNs)/2/1e9))
			h := iv.Latencies(results.Total)
			switch {
			case h == nil || h.TotalCount() == 0:
				s.Y = append(s.Y, noValue)
			case stat == results.StatMax:
				s.Y = append(s.Y, num(msOf(float64(h.Max()))))
			default:
				s.Y = append(s.Y, num(msOf(float64(h.ValueAtQuantile(99)))))
			}
		}
		s.Only = isolatedPoints(s.Y)
		s.Points = len(s.Only) > 0
		ch.Series = append(ch.Series, s)
		if w := r.Summary.FaultWindow; w != nil {
			x0, x1 := float64(w.StartNs)/1e9, float64(w.EndNs)/1e9
			if ch.Band != nil {
				x0, x1 = math.Min(float64(ch.Band.X0), x0), math.Max(float64(ch.Band.X1), x1)
			}
			ch.Band = &htmlBand{X0: num(x0), X1: num(x1), Label: "fault active"}
		}
	}
	return ch
}

// isolatedPoints returns the indices of the values of ys with gaps (or
// ends) on both sides, which a line alone would not show.
func isolatedPoints(ys []num) []int {
	isGap := func(i int) bool { return i < 0 || i >= len(ys) || math.IsNaN(float64(ys[i])) }
	var out []int
	for i := range ys {
		if !isGap(i) && isGap(i-1) && isGap(i+1) {
			out = append(out, i)
		}
	}
	return out
}

// downsampleIntervals merges runs of neighbouring intervals so that at
// most max remain. The merged interval's total latencies (Sparse) are the
// merge of its parts', so a percentile of it is exact for its span.
func downsampleIntervals(ivs []results.Interval, max int) []results.Interval {
	if len(ivs) <= max {
		return ivs
	}
	per := (len(ivs) + max - 1) / max
	out := make([]results.Interval, 0, max)
	for i := 0; i < len(ivs); i += per {
		end := min(i+per, len(ivs))
		m := results.Interval{StartNs: ivs[i].StartNs, EndNs: ivs[end-1].EndNs}
		h := results.NewSparse()
		for _, iv := range ivs[i:end] {
			switch {
			case iv.Sparse[results.Total] != nil:
				h.Merge(iv.Sparse[results.Total])
			case iv.Hists[results.Total] != nil:
				h.Merge(results.SparseOf(iv.Hists[results.Total]))
			}
		}
		m.Sparse[results.Total] = h
		out = append(out, m)
	}
	return out
}

// distinctXs moves each x that repeats an earlier one (as JSON writes it,
// num) up by a part in 10^5: uPlot keys a series' points by x, so two
// offered rates that achieved the same throughput (both saturated at one
// figure) would otherwise show as one point. No chart resolves the shift.
func distinctXs(xs []num) []num {
	seen := map[string]bool{}
	for i, x := range xs {
		for {
			b, _ := x.MarshalJSON()
			if !seen[string(b)] {
				seen[string(b)] = true
				break
			}
			x *= 1 + 1e-5
		}
		xs[i] = x
	}
	return xs
}
