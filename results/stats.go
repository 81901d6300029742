package results

import (
	"encoding/json"
	"math"
	"slices"

	"golang.org/x/perf/benchmath"
)

// Statistics over trials. lockbench follows benchstat (golang.org/x/perf
// benchmath, AssumeNothing): no assumption about the distribution of a
// figure over trials, so the centre is the median, its interval the
// distribution-free confidence interval of a median from order statistics,
// and two sets of trials are compared with the Mann–Whitney U test. Safety
// is a proportion (k of N trials unsafe), given with its Wilson score
// interval, which stays inside [0, 1] and is not degenerate at 0/N or N/N
// as the normal approximation is.
const (
	// Confidence is the level of every interval: 95%.
	Confidence = 0.95
	// MinTrialsForCI is the fewest trials a median's 95% interval can be
	// had from: 6 (with 6, the interval is [min, max] at 96.9%). With
	// fewer, an Estimate gives the range instead and says so.
	MinTrialsForCI = 6
	// z95 is the standard normal quantile of a two-sided 95% interval.
	z95 = 1.959963984540054
)

// Wilson returns the Wilson score interval at Confidence of the proportion
// k/n: [0, 0.390] for 0/6, [0.188, 0.812] for 3/6. It returns [0, 1] when
// n is 0 (nothing is known).
func Wilson(k, n int) [2]float64 {
	if n <= 0 {
		return [2]float64{0, 1}
	}
	p, nf, z2 := float64(k)/float64(n), float64(n), z95*z95
	denom := 1 + z2/nf
	centre := (p + z2/(2*nf)) / denom
	half := z95 * math.Sqrt(p*(1-p)/nf+z2/(4*nf*nf)) / denom
	lo, hi := math.Max(0, centre-half), math.Min(1, centre+half)
	// At 0/n and n/n the bound equals the proportion exactly; keep it so
	// instead of a rounding error away.
	if k == 0 {
		lo = 0
	}
	if k == n {
		hi = 1
	}
	return [2]float64{lo, hi}
}

// Estimate is one figure over a cell's trials: its median and, from
// MinTrialsForCI trials up, the median's confidence interval (CI, at
// Level ≥ Confidence), else the range of the trials (Range). N is the
// number of trials the figure is over, which is fewer than the cell's
// when some trials did not report it (a percentile with too few samples
// beyond it); with N = 0 there is no figure.
type Estimate struct {
	Median float64
	// Lo and Hi bound the interval: the CI when CI is set, else the range.
	Lo, Hi float64
	CI     bool
	// Level is the CI's actual confidence level (≥ Confidence; order
	// statistics give it in steps, 0.969 for 6 trials).
	Level float64
	N     int
}

// EstimateOf returns the Estimate of values, one per trial (in any order;
// values is not modified).
func EstimateOf(values []float64) Estimate {
	vs := make([]float64, 0, len(values))
	for _, v := range values {
		if !math.IsNaN(v) && !math.IsInf(v, 0) {
			vs = append(vs, v)
		}
	}
	e := Estimate{N: len(vs)}
	if e.N == 0 {
		return e
	}
	sample := benchmath.NewSample(vs, &benchmath.DefaultThresholds)
	sum := benchmath.AssumeNothing.Summary(sample, Confidence)
	e.Median = sum.Center
	if e.N >= MinTrialsForCI && !math.IsInf(sum.Lo, 0) && !math.IsInf(sum.Hi, 0) {
		e.Lo, e.Hi, e.CI, e.Level = sum.Lo, sum.Hi, true, sum.Confidence
		return e
	}
	e.Lo, e.Hi = slices.Min(vs), slices.Max(vs)
	return e
}

// OK reports whether there is a figure at all.
func (e Estimate) OK() bool { return e.N > 0 }

// estimateJSON is Estimate in aggregate.json.
type estimateJSON struct {
	Median *float64    `json:"median"`
	CI95   *[2]float64 `json:"ci95,omitempty"`
	Range  *[2]float64 `json:"range,omitempty"`
	Level  float64     `json:"ci_level,omitempty"`
	N      int         `json:"n"`
}

// MarshalJSON writes {"median", "ci95": [lo, hi], "ci_level", "n"} from
// MinTrialsForCI trials up, {"median", "range": [min, max], "n"} below, and
// {"median": null, "n": 0} without a figure.
func (e Estimate) MarshalJSON() ([]byte, error) {
	var out estimateJSON
	out.N = e.N
	if e.OK() {
		m, iv := e.Median, [2]float64{e.Lo, e.Hi}
		out.Median = &m
		if e.CI {
			out.CI95, out.Level = &iv, e.Level
		} else {
			out.Range = &iv
		}
	}
	return json.Marshal(out)
}

// UnmarshalJSON reads what MarshalJSON writes.
func (e *Estimate) UnmarshalJSON(b []byte) error {
	var in estimateJSON
	if err := json.Unmarshal(b, &in); err != nil {
		return err
	}
	*e = Estimate{N: in.N, Level: in.Level}
	if in.Median != nil {
		e.Median = *in.Median
	}
	switch {
	case in.CI95 != nil:
		e.Lo, e.Hi, e.CI = in.CI95[0], in.CI95[1], true
	case in.Range != nil:
		e.Lo, e.Hi = in.Range[0], in.Range[1]
	}
	return nil
}

// Significance is the outcome of comparing two sets of trials of one
// figure (Mann–Whitney U, as benchstat).
type Significance struct {
	// P is the test's p-value; the difference is significant when P ≤
	// Alpha.
	P, Alpha float64
	// TooFew is set when the trials could not show a difference at Alpha
	// however far apart they were (the U test needs 4 trials a side, or 3
	// and 5, at 0.05).
	TooFew bool
}

// Significant reports whether the two sets differ at Alpha.
func (s Significance) Significant() bool { return !s.TooFew && s.P <= s.Alpha }

// Compare tests whether the trials old and new of one figure come from the
// same distribution, with benchmath's AssumeNothing (Mann–Whitney U) at
// alpha 0.05.
func Compare(old, new []float64) Significance {
	if len(old) == 0 || len(new) == 0 {
		return Significance{P: 1, Alpha: benchmath.DefaultThresholds.CompareAlpha, TooFew: true}
	}
	a := benchmath.NewSample(slices.Clone(old), &benchmath.DefaultThresholds)
	b := benchmath.NewSample(slices.Clone(new), &benchmath.DefaultThresholds)
	c := benchmath.AssumeNothing.Compare(a, b)
	s := Significance{P: c.P, Alpha: c.Alpha}
	// The smallest p-value the two-sided U test can give for these sizes
	// is 2 / C(n1+n2, n1), when the sets do not overlap at all; above
	// alpha, no difference could show (3 + 3 trials: 0.1).
	if c.P > c.Alpha && 2/binomial(len(old)+len(new), len(old)) > c.Alpha {
		s.TooFew = true
	}
	return s
}

// binomial is C(n, k) as a float.
func binomial(n, k int) float64 {
	r := 1.0
	for i := 1; i <= k; i++ {
		r = r * float64(n-k+i) / float64(i)
	}
	return r
}
