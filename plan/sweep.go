package plan

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/lockbench/lockbench/results"
)

// Sweep defaults and bounds.
const (
	// DefaultStartRate is the first offered rate without a target: 250
	// payments/s (see StartRate).
	DefaultStartRate = 250.0
	// DefaultRateStep is the factor between ramp steps: 2.
	DefaultRateStep = 2.0
	// DefaultRefine is the number of bisection steps between the last rate
	// that held and the first that did not: 2 (a factor of 2 narrows to
	// 2^(1/4) ≈ 1.19).
	DefaultRefine = 2
	// MaxSteps bounds the rates one sweep tries: 12.
	MaxSteps = 12
	// maxWalkDown bounds the steps below the start rate when even the
	// first step fails: 3 (a factor of 8 at ×2). Below that a plan is
	// better re-run with a lower start rate than walked down further.
	maxWalkDown = 3
	// minRate is the lowest rate a sweep tries: 1 payment/s.
	minRate = 1.0
)

// Config is how one strategy's rate sweep runs and judges its steps.
type Config struct {
	// Start is the first offered rate, payments/s (see StartRate).
	Start float64
	// Factor is the ratio between ramp steps, > 1 (DefaultRateStep).
	Factor float64
	// MaxRate caps the offered rate, payments/s; 0: no cap.
	MaxRate float64
	// Refine is the number of bisection steps after the first failing
	// rate (DefaultRefine).
	Refine int
	// SLO is the p99 total latency a sustainable rate stays under
	// (DefaultSLOP99).
	SLO time.Duration
	// Confirm re-runs a failing step once; the rate fails only if the
	// second run fails too, so one hiccup of a shared machine does not
	// end a sweep. With Trials above 1 the trials decide instead.
	Confirm bool
	// Trials is how many times each rate is run (0 means 1); the rate
	// holds when more than half of its trials hold.
	Trials int
}

// StartRate is the first offered rate for a target (payments/s; 0: none):
// two steps of factor below the target, so the target itself is one of the
// steps, or DefaultStartRate without a target.
func StartRate(target, factor float64) float64 {
	if target <= 0 {
		return DefaultStartRate
	}
	return roundRate(target / (factor * factor))
}

// StepFunc runs one trial (1…Config.Trials) of one step of a sweep at an
// offered rate (payments/s). The caller decides what a step is (in
// lockbench, one open-loop run of the plan's scenario, with the trial's
// seed); Sweep only chooses the rates and judges the runs.
type StepFunc func(ctx context.Context, rate float64, trial int) (results.Run, error)

// SweepResult is what a sweep found.
type SweepResult struct {
	// Steps are every step run, in order; Runs the runs that decided a
	// rate (a failed step that was retried is in Steps only).
	Steps []Step
	Runs  []results.Run
	// Max is the highest offered rate that held (0: none did); Achieved
	// is the achieved rate at that step.
	Max, Achieved float64
	// LimitedBy is why no higher rate was found: the failing step's
	// reason, "--max-rate reached" or "step limit".
	LimitedBy string
}

// Sweep finds the highest sustainable rate: it ramps the offered rate by
// cfg.Factor from cfg.Start until a step fails (or cfg.MaxRate holds),
// walks down by the same factor (at most maxWalkDown steps) when the very
// first step fails, then bisects (geometric mean) cfg.Refine times between
// the highest rate that held and the lowest that failed. It assumes a rate
// that fails would fail at any higher rate. At most MaxSteps rates are
// tried (a confirming re-run, or a rate's further trials, do not count); it
// stops early, with what it has, when ctx is done or a step returns an
// error.
func Sweep(ctx context.Context, cfg Config, step StepFunc) (SweepResult, error) {
	s := &sweeper{ctx: ctx, cfg: cfg, step: step, hi: math.Inf(1), trials: max(cfg.Trials, 1)}
	err := s.ramp()
	if err == nil {
		err = s.walkDown()
	}
	if err == nil {
		err = s.bisect()
	}
	return s.finish(err)
}

// sweeper is one Sweep under way: lo is the highest rate that held (0:
// none yet), hi the lowest that failed (+Inf: none yet) and hiReason why.
type sweeper struct {
	ctx      context.Context
	cfg      Config
	step     StepFunc
	res      SweepResult
	lo, hi   float64
	hiReason string
	tried    int
	trials   int
}

// Ramp is the rates a sweep's ramp tries, in order, while every one
// holds: from cfg.Start by cfg.Factor, the last one cfg.MaxRate when there
// is a cap, at most MaxSteps.
func Ramp(cfg Config) []float64 {
	var rates []float64
	for rate := cfg.Start; len(rates) < MaxSteps; rate = roundRate(rate * cfg.Factor) {
		if cfg.MaxRate > 0 && rate >= cfg.MaxRate {
			return append(rates, cfg.MaxRate)
		}
		rates = append(rates, rate)
	}
	return rates
}

// MostSteps bounds the rates a sweep of cfg tries, and Lowest is the
// lowest it may try: the ramp then the bisection below the first rate that
// fails, or, when the first fails, the walk down and the bisection above
// it; never more than MaxSteps (a confirming re-run, or a rate's further
// trials, do not count).
func MostSteps(cfg Config) (n int, lowest float64) {
	lowest = cfg.Start
	for i := 0; i < maxWalkDown && roundRate(lowest/cfg.Factor) >= minRate; i++ {
		lowest = roundRate(lowest / cfg.Factor)
	}
	if cfg.MaxRate > 0 && cfg.Start > cfg.MaxRate {
		lowest = min(lowest, cfg.MaxRate)
	}
	return min(MaxSteps, max(len(Ramp(cfg)), 1+maxWalkDown)+cfg.Refine), lowest
}

// ramp tries the rates of Ramp until one fails.
func (s *sweeper) ramp() error {
	for _, rate := range Ramp(s.cfg) {
		if !s.room() {
			break
		}
		ok, err := s.try(rate)
		if err != nil || !ok {
			return err
		}
	}
	return nil
}

// walkDown lowers the rate from the first, failed, step until one holds.
func (s *sweeper) walkDown() error {
	rate := s.hi
	for i := 0; i < maxWalkDown && s.lo == 0 && s.room(); i++ {
		if rate = roundRate(rate / s.cfg.Factor); rate < minRate {
			break
		}
		if _, err := s.try(rate); err != nil {
			return err
		}
	}
	return nil
}

// bisect tries the geometric mean of the last rate that held and the
// first that failed, cfg.Refine times.
func (s *sweeper) bisect() error {
	for i := 0; i < s.cfg.Refine && s.lo > 0 && !math.IsInf(s.hi, 1) && s.room(); i++ {
		mid := roundRate(math.Sqrt(s.lo * s.hi))
		if mid <= s.lo || mid >= s.hi {
			break
		}
		if _, err := s.try(mid); err != nil {
			return err
		}
	}
	return nil
}

// room says whether another rate may be tried (MaxSteps).
func (s *sweeper) room() bool { return s.tried < MaxSteps }

// try runs a rate (once more if it fails and cfg.Confirm, with one trial)
// and moves lo or hi; it says whether the rate held.
func (s *sweeper) try(rate float64) (bool, error) {
	s.tried++
	st, err := s.once(rate)
	if err == nil && !st.OK && s.cfg.Confirm && s.trials == 1 {
		s.res.Steps[len(s.res.Steps)-1].Retried = true
		s.res.Runs = s.res.Runs[:len(s.res.Runs)-1]
		st, err = s.once(rate)
	}
	if err != nil {
		return false, err
	}
	if st.OK && rate > s.lo {
		s.lo, s.res.Achieved = rate, st.Achieved
	} else if !st.OK && rate < s.hi {
		s.hi, s.hiReason = rate, st.Reason
	}
	return st.OK, nil
}

// once runs every trial of a rate; it holds when more than half do, at
// the median achieved rate, and fails for its first failing trial's
// reason.
func (s *sweeper) once(rate float64) (Step, error) {
	var held int
	var achieved []float64
	var verdict Step
	for t := 1; t <= s.trials; t++ {
		r, err := s.step(s.ctx, rate, t)
		if err == nil && (r.Summary.Interrupted || s.ctx.Err() != nil) {
			err = s.ctx.Err()
		}
		if err != nil {
			return Step{}, err
		}
		s.res.Runs = append(s.res.Runs, r)
		st := judge(&r.Summary, rate, s.cfg.SLO)
		if s.trials > 1 {
			st.Trial = t
		}
		s.res.Steps = append(s.res.Steps, st)
		achieved = append(achieved, st.Achieved)
		if st.OK {
			held++
		} else if verdict.Reason == "" {
			verdict.Reason = st.Reason
		}
	}
	verdict.OK = 2*held > s.trials
	if verdict.OK {
		verdict.Reason = ""
	} else if s.trials > 1 {
		verdict.Reason = fmt.Sprintf("%d of %d trials failed: %s", s.trials-held, s.trials, verdict.Reason)
	}
	verdict.Achieved = results.EstimateOf(achieved).Median
	return verdict, nil
}

// finish is the result so far, with err: the highest rate that held and
// what stopped the sweep going higher.
func (s *sweeper) finish(err error) (SweepResult, error) {
	s.res.Max = s.lo
	switch {
	case !math.IsInf(s.hi, 1):
		s.res.LimitedBy = s.hiReason
	case s.cfg.MaxRate > 0 && s.lo >= s.cfg.MaxRate:
		s.res.LimitedBy = "--max-rate reached"
	default:
		s.res.LimitedBy = "step limit"
	}
	return s.res, err
}

// roundRate rounds a rate to a whole number of payments/s (to 0.1 under
// 10/s), so steps have readable names.
func roundRate(r float64) float64 {
	if r < 10 {
		return math.Round(r*10) / 10
	}
	return math.Round(r)
}
