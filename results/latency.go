package results

import (
	"encoding/json"
)

// MinTailSamples is how many samples must lie beyond a percentile for it to
// be reported: 10. With fewer, the percentile is one of a handful of values
// (p99.9 of 2,000 samples is the second-worst) and moves with each one, so
// lockbench writes null in JSON, an empty CSV cell and "—" on screen instead
// of a number that looks precise and is not.
const MinTailSamples = 10

// percentileStat is one percentile of Latency: its name and 1/(1−q), the
// inverse of the share of samples beyond it (p99: 100).
type percentileStat struct {
	name    string
	inverse int64
	get     func(l Latency) int64
}

// percentileStats are Latency's percentiles, in order.
var percentileStats = []percentileStat{
	{"p50", 2, func(l Latency) int64 { return l.P50 }},
	{"p90", 10, func(l Latency) int64 { return l.P90 }},
	{"p99", 100, func(l Latency) int64 { return l.P99 }},
	{"p999", 1000, func(l Latency) int64 { return l.P999 }},
}

// Stat names of Latency, as in its JSON.
const (
	StatP50  = "p50"
	StatP90  = "p90"
	StatP99  = "p99"
	StatP999 = "p999"
	StatMax  = "max"
	StatMean = "mean"
)

// MinCount returns how many samples a distribution needs for its percentile
// stat (StatP50 … StatP999) to be reported: MinTailSamples beyond it, so
// 20 for p50, 1,000 for p99 and 10,000 for p99.9. Max and mean need one.
func MinCount(stat string) int64 {
	for _, p := range percentileStats {
		if p.name == stat {
			return MinTailSamples * p.inverse
		}
	}
	return 1
}

// Has reports whether the statistic stat of l is reported: a percentile
// when at least MinTailSamples samples lie beyond it (MinCount), max and
// mean when there is any sample.
func (l Latency) Has(stat string) bool { return l.Count >= MinCount(stat) }

// Value returns the statistic stat of l in nanoseconds (the mean rounded)
// and whether it is reported (Has).
func (l Latency) Value(stat string) (int64, bool) {
	if !l.Has(stat) {
		return 0, false
	}
	switch stat {
	case StatMax:
		return l.Max, true
	case StatMean:
		return roundF(l.Mean), true
	}
	for _, p := range percentileStats {
		if p.name == stat {
			return p.get(l), true
		}
	}
	return 0, false
}

// honest returns l with every statistic that is not reported (Has) zeroed,
// so that a summary in memory says no more than its file.
func (l Latency) honest() Latency {
	if !l.Has(StatP50) {
		l.P50 = 0
	}
	if !l.Has(StatP90) {
		l.P90 = 0
	}
	if !l.Has(StatP99) {
		l.P99 = 0
	}
	if !l.Has(StatP999) {
		l.P999 = 0
	}
	if l.Count == 0 {
		l.Max, l.Mean = 0, 0
	}
	return l
}

// latencyJSON is Latency in a file: a statistic that is not reported is
// null, its count beside it.
type latencyJSON struct {
	P50   *int64   `json:"p50"`
	P90   *int64   `json:"p90"`
	P99   *int64   `json:"p99"`
	P999  *int64   `json:"p999"`
	Max   *int64   `json:"max"`
	Mean  *float64 `json:"mean"`
	Count int64    `json:"count"`
}

// MarshalJSON writes l with null for each statistic that is not reported
// (Has): a percentile with fewer than MinTailSamples samples beyond it, and
// max and mean without samples.
func (l Latency) MarshalJSON() ([]byte, error) {
	some := func(stat string, v int64) *int64 {
		if !l.Has(stat) {
			return nil
		}
		return &v
	}
	out := latencyJSON{
		P50: some(StatP50, l.P50), P90: some(StatP90, l.P90), P99: some(StatP99, l.P99), P999: some(StatP999, l.P999),
		Max: some(StatMax, l.Max), Count: l.Count,
	}
	if l.Count > 0 {
		m := l.Mean
		out.Mean = &m
	}
	return json.Marshal(out)
}

// UnmarshalJSON reads what MarshalJSON writes; null reads as 0 (Has tells
// it apart by the count).
func (l *Latency) UnmarshalJSON(b []byte) error {
	var in latencyJSON
	if err := json.Unmarshal(b, &in); err != nil {
		return err
	}
	v := func(p *int64) int64 {
		if p == nil {
			return 0
		}
		return *p
	}
	*l = Latency{P50: v(in.P50), P90: v(in.P90), P99: v(in.P99), P999: v(in.P999), Max: v(in.Max), Count: in.Count}
	if in.Mean != nil {
		l.Mean = *in.Mean
	}
	return nil
}

// Dash is what a screen, the report and the charts show for a figure that
// is not reported: too few samples, or no trials to take it from.
const Dash = "—"
