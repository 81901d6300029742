package results

import (
	"testing"
)

// A percentile is reported only with MinTailSamples samples beyond it:
// p50 from 20 samples, p90 from 100, p99 from 1,000, p99.9 from 10,000.
func TestLatencyHas(t *testing.T) {
	cases := []struct {
		count int64
		want  map[string]bool
	}{
		{0, map[string]bool{StatP50: false, StatMax: false, StatMean: false}},
		{19, map[string]bool{StatP50: false, StatMax: true, StatMean: true}},
		{20, map[string]bool{StatP50: true, StatP90: false}},
		{999, map[string]bool{StatP90: true, StatP99: false}},
		{1000, map[string]bool{StatP99: true, StatP999: false}},
		{9999, map[string]bool{StatP999: false}},
		{10000, map[string]bool{StatP999: true}},
	}
	for _, c := range cases {
		l := Latency{P50: 1, P90: 2, P99: 3, P999: 4, Max: 5, Mean: 2, Count: c.count}
		for stat, want := range c.want {
			if got := l.Has(stat); got != want {
				t.Errorf("count %d: Has(%s) = %v; want %v", c.count, stat, got, want)
			}
		}
	}
}
