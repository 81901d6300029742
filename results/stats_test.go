package results

import (
	"encoding/json"
	"math"
	"testing"
)

// Wilson intervals against values computed by hand from the score
// formula (z = 1.959964).
func TestWilson(t *testing.T) {
	cases := []struct {
		k, n   int
		lo, hi float64
	}{
		// No unsafe trial in six: the rate may still be up to 39%.
		{0, 6, 0, 0.390334},
		// Half: wide, symmetric around 0.5.
		{3, 6, 0.187616, 0.812384},
		// All six unsafe: at least 61%.
		{6, 6, 0.609666, 1},
		{1, 10, 0.017876, 0.404150},
		// Nothing known without trials.
		{0, 0, 0, 1},
	}
	for _, c := range cases {
		got := Wilson(c.k, c.n)
		if math.Abs(got[0]-c.lo) > 1e-6 || math.Abs(got[1]-c.hi) > 1e-6 {
			t.Errorf("Wilson(%d, %d) = [%.6f, %.6f]; want [%.6f, %.6f]", c.k, c.n, got[0], got[1], c.lo, c.hi)
		}
	}
}

// The median's interval comes from order statistics (benchmath): from 6
// values it is a confidence interval, below it the range.
func TestEstimateOf(t *testing.T) {
	cases := []struct {
		name           string
		values         []float64
		median, lo, hi float64
		ci             bool
		n              int
	}{
		// One trial: its value, no spread.
		{"one", []float64{5}, 5, 5, 5, false, 1},
		// Fewer than six: the range, and no claim of confidence.
		{"three", []float64{3, 1, 2}, 2, 1, 3, false, 3},
		// Six: the 95% interval of the median is [min, max] (at 96.9%).
		{"six", []float64{6, 1, 5, 2, 4, 3}, 3.5, 1, 6, true, 6},
		// Ten: the interval narrows to the 2nd and 9th values.
		{"ten", []float64{10, 9, 8, 7, 6, 5, 4, 3, 2, 1}, 5.5, 2, 9, true, 10},
		// NaN (no figure) is left out.
		{"nan", []float64{math.NaN(), 4}, 4, 4, 4, false, 1},
		{"none", nil, 0, 0, 0, false, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := EstimateOf(c.values)
			if e.Median != c.median || e.Lo != c.lo || e.Hi != c.hi || e.CI != c.ci || e.N != c.n {
				t.Errorf("EstimateOf(%v) = %+v; want median %g [%g, %g] ci=%v n=%d", c.values, e, c.median, c.lo, c.hi, c.ci, c.n)
			}
			if c.ci && e.Level < Confidence {
				t.Errorf("level = %g; want ≥ %g", e.Level, Confidence)
			}
		})
	}
}

// In aggregate.json an Estimate is {median, ci95, ci_level, n} from six
// trials up, {median, range, n} below and {median: null, n: 0} without a
// figure; and it reads back.
func TestEstimateJSON(t *testing.T) {
	cases := []struct {
		e    Estimate
		want string
	}{
		{EstimateOf([]float64{1, 2, 3, 4, 5, 6}), `{"median":3.5,"ci95":[1,6],"ci_level":0.96875,"n":6}`},
		{EstimateOf([]float64{1, 2, 3}), `{"median":2,"range":[1,3],"n":3}`},
		{EstimateOf(nil), `{"median":null,"n":0}`},
	}
	for _, c := range cases {
		b, err := json.Marshal(c.e)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != c.want {
			t.Errorf("JSON = %s; want %s", b, c.want)
		}
		var back Estimate
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		if back != c.e {
			t.Errorf("read back %+v; want %+v", back, c.e)
		}
	}
}

// The Mann–Whitney U test (benchmath's), and when it cannot tell.
func TestCompareSignificance(t *testing.T) {
	cases := []struct {
		name        string
		old, new    []float64
		significant bool
		tooFew      bool
	}{
		// Three against three can never reach p ≤ 0.05 (its least p is 0.1).
		{"3+3 apart", []float64{1, 2, 3}, []float64{4, 5, 6}, false, true},
		// Four against four, fully apart: p = 0.029.
		{"4+4 apart", []float64{1, 2, 3, 4}, []float64{5, 6, 7, 8}, true, false},
		// Six against six, interleaved: no difference.
		{"6+6 mixed", []float64{1, 3, 5, 7, 9, 11}, []float64{2, 4, 6, 8, 10, 12}, false, false},
		// One trial each: too few.
		{"1+1", []float64{1}, []float64{2}, false, true},
		// Nothing on one side.
		{"empty", nil, []float64{2}, false, true},
	}
	for _, c := range cases {
		s := Compare(c.old, c.new)
		if s.Significant() != c.significant || s.TooFew != c.tooFew {
			t.Errorf("%s: %+v (significant %v); want significant %v, too few %v", c.name, s, s.Significant(), c.significant, c.tooFew)
		}
	}
}
