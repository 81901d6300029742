package plan

import (
	"math"

	"github.com/lockbench/lockbench/results"
	"github.com/lockbench/lockbench/strategies"
)

// File is the plan's file in a run directory.
const File = "plan.json"

// Report is the plan: plan.json. Its JSON field names are a contract with
// users' scripts, like summary.json's.
type Report struct {
	// TargetRate is the payments/s the plan was asked to fit (0: none).
	TargetRate float64 `json:"target_rate"`
	// SLOP99Ns and MaxBehind are what a step had to meet (Sustainable).
	SLOP99Ns  int64   `json:"slo_p99_ns"`
	MaxBehind float64 `json:"max_behind"`
	// StepDurationNs and StepWarmupNs are each step's measured and
	// unrecorded lengths.
	StepDurationNs int64 `json:"step_duration_ns"`
	StepWarmupNs   int64 `json:"step_warmup_ns"`
	// RisksFrom says where Line.Risks came from: expected or measured.
	RisksFrom string `json:"risks_from"`
	// Params are the sweep's scenario knobs (the rate varies per step).
	Params     results.Params `json:"params"`
	Strategies []Line         `json:"strategies"`
	// Interrupted marks a plan cut short: only the lines so far.
	Interrupted bool `json:"interrupted,omitempty"`
}

// Line is one strategy's line of the plan.
type Line struct {
	Strategy string `json:"strategy"`
	// Exclusion is false for strategies that exclude nobody across
	// instances (nolock, mutex): their rate is no lock's capacity.
	Exclusion bool `json:"exclusion"`
	// Fencing reports whether the store checked the strategy's tokens.
	Fencing bool `json:"fencing"`
	// MaxRate is the highest offered payments/s that held (0: none did);
	// MaxAchieved the payments/s achieved at it.
	MaxRate     float64 `json:"max_sustainable_rate"`
	MaxAchieved float64 `json:"max_achieved_rate"`
	LimitedBy   string  `json:"limited_by"`
	// Fits and Headroom (MaxRate ÷ target) are set with a target rate; a
	// strategy without exclusion never fits.
	Fits     bool    `json:"fits"`
	Headroom float64 `json:"headroom"`
	// Cost is the latency at the step nearest the target (or, without
	// one, at MaxRate).
	Cost Cost `json:"cost"`
	// Risks says what the strategy risks under faults (see
	// Report.RisksFrom).
	Risks string `json:"risks"`
	// SweepUnsafe counts safety violations seen during the fault-free
	// sweep itself; non-zero only for strategies without exclusion.
	SweepUnsafe int64  `json:"sweep_unsafe"`
	Steps       []Step `json:"steps"`
	// Error is why the sweep stopped early, if it did.
	Error string `json:"error,omitempty"`
}

// Step is one step of a sweep as plan.json records it: one trial at one
// rate. A latency it does not report (too few deliveries for it) is 0.
type Step struct {
	Rate float64 `json:"rate"`
	// Trial is which of the rate's trials this is, 1…N; 0 (left out)
	// with one trial per rate.
	Trial        int     `json:"trial,omitempty"`
	Achieved     float64 `json:"achieved_rate"`
	TotalP99Ns   int64   `json:"total_p99_ns"`
	AcquireP50Ns int64   `json:"acquire_p50_ns"`
	AcquireP99Ns int64   `json:"acquire_p99_ns"`
	Errors       int64   `json:"errors"`
	Unprocessed  int64   `json:"unprocessed"`
	Unsafe       int64   `json:"unsafe"`
	OK           bool    `json:"ok"`
	// Reason says why the step failed; empty when it held.
	Reason string `json:"reason,omitempty"`
	// Retried marks a failed step that was run again at the same rate;
	// the retry decided, and only it is in the run directory.
	Retried bool `json:"retried,omitempty"`
}

// Cost is the latency a strategy costs at one offered rate.
type Cost struct {
	AtRate       float64 `json:"at_rate"`
	AcquireP50Ns int64   `json:"acquire_p50_ns"`
	AcquireP99Ns int64   `json:"acquire_p99_ns"`
	TotalP99Ns   int64   `json:"total_p99_ns"`
}

// LineOf is a strategy's line of the plan, from its registry entry and its
// sweep. fencing is whether the scenario has the store check tokens (the
// line is fenced only if the strategy has tokens too); target is the rate
// to fit, payments/s (0: none).
func LineOf(info strategies.Info, fencing bool, target float64, sw SweepResult, risks Risks) Line {
	fenced := fencing && info.Fencing
	l := Line{
		Strategy: info.Name, Exclusion: info.CrossProcess, Fencing: fenced,
		MaxRate: sw.Max, MaxAchieved: sw.Achieved, LimitedBy: sw.LimitedBy,
		Cost: costAt(sw.Steps, target), Risks: risks(info, fenced),
		Steps: sw.Steps,
	}
	if target > 0 {
		l.Headroom = sw.Max / target
		l.Fits = info.CrossProcess && sw.Max >= target
	}
	for _, st := range sw.Steps {
		l.SweepUnsafe += st.Unsafe
	}
	return l
}

// costAt picks the step whose latency a strategy costs at target: the step
// at the target, else the nearest (by ratio) that held, else the nearest.
// Without a target it is the highest step that held. Failed steps that
// were retried do not count: their retry decided.
func costAt(steps []Step, target float64) Cost {
	nearest := func(held bool) int {
		best, bestD := -1, math.Inf(1)
		for i, st := range steps {
			if st.Retried || (held && !st.OK) {
				continue
			}
			d := -st.Rate // no target: the highest
			if target > 0 {
				d = math.Abs(math.Log(st.Rate / target))
			}
			if d < bestD {
				best, bestD = i, d
			}
		}
		return best
	}
	i := -1
	for j, st := range steps {
		if target > 0 && st.Rate == target && !st.Retried {
			i = j
		}
	}
	if i < 0 {
		i = nearest(true)
	}
	if i < 0 {
		i = nearest(false)
	}
	if i < 0 {
		return Cost{}
	}
	// Of several trials at the rate, the medians.
	rate := steps[i].Rate
	var p50, p99, total []float64
	for _, st := range steps {
		if st.Rate != rate || st.Retried {
			continue
		}
		p50, p99, total = append(p50, float64(st.AcquireP50Ns)), append(p99, float64(st.AcquireP99Ns)), append(total, float64(st.TotalP99Ns))
	}
	med := func(vs []float64) int64 { return int64(math.Round(results.EstimateOf(vs).Median)) }
	return Cost{AtRate: rate, AcquireP50Ns: med(p50), AcquireP99Ns: med(p99), TotalP99Ns: med(total)}
}
