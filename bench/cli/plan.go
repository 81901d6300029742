package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/lockbench/lockbench/loadgen"
	"github.com/lockbench/lockbench/results"
	"github.com/lockbench/lockbench/servers"
	"github.com/lockbench/lockbench/strategies"
)

// Sweep defaults of `lockbench plan`.
const (
	// DefaultSLOP99 is the p99 total latency a sustainable rate must stay
	// under: 20ms.
	DefaultSLOP99 = 20 * time.Millisecond
	// DefaultStartRate is the first offered rate without --target-rate:
	// 250 payments/s. With a target the sweep starts two steps below it,
	// so the target itself is one of the steps.
	DefaultStartRate = 250.0
	// DefaultRateStep is the factor between ramp steps: 2.
	DefaultRateStep = 2.0
	// DefaultRefine is the number of bisection steps between the last rate
	// that held and the first that did not: 2 (a factor of 2 narrows to
	// 2^(1/4) ≈ 1.19).
	DefaultRefine = 2
	// DefaultStepDuration is the measured length of one step: 2s.
	DefaultStepDuration = 2 * time.Second
	// DefaultStepWarmup is the unrecorded start of each step: 500ms.
	DefaultStepWarmup = 500 * time.Millisecond
	// MaxBehind is how far the achieved rate may fall behind the offered
	// rate before the step fails: 5%.
	MaxBehind = 0.05
	// MaxSweepSteps bounds the steps of one strategy's sweep: 12.
	MaxSweepSteps = 12
	// maxWalkDown bounds the steps below the start rate when even the
	// first step fails: 3 (a factor of 8 at ×2). Below that a plan is
	// better re-run with a lower --start-rate than walked down further.
	maxWalkDown = 3
	// minSweepRate is the lowest rate a sweep tries: 1 payment/s.
	minSweepRate = 1.0
	// PlanFile is the plan's file in the run directory.
	PlanFile = "plan.json"
)

// sweepConfig is how one strategy's rate sweep runs and judges its steps.
type sweepConfig struct {
	start, factor, maxRate float64 // payments/s; maxRate 0: no cap
	refine                 int
	slo                    time.Duration
	// confirm re-runs a failing step once; the rate fails only if the
	// second run fails too, so one hiccup of a shared machine does not
	// end a sweep.
	confirm bool
}

// stepFunc runs one step of a sweep at an offered rate (payments/s).
type stepFunc func(ctx context.Context, rate float64) (results.Run, error)

// planStep is one step of a sweep as plan.json records it.
type planStep struct {
	Rate         float64 `json:"rate"`
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

// judge decides whether a sweep step at offered rate held: p99 total
// latency within slo, no errors, no payment given up on, and the achieved
// rate no more than MaxBehind behind the offered one. Safety is not a
// capacity criterion; it is reported beside it.
func judge(s *results.Summary, rate float64, slo time.Duration) planStep {
	st := planStep{
		Rate:         rate,
		Achieved:     s.PaymentsPerSec,
		TotalP99Ns:   s.Latency["total"].P99,
		AcquireP50Ns: s.Latency["acquire"].P50,
		AcquireP99Ns: s.Latency["acquire"].P99,
		Unprocessed:  s.Unprocessed,
		Unsafe:       s.UnsafeCount(),
	}
	for _, n := range s.Errors {
		st.Errors += n
	}
	var why []string
	if st.TotalP99Ns > int64(slo) {
		why = append(why, fmt.Sprintf("p99 %s > %s", human(st.TotalP99Ns), human(int64(slo))))
	}
	if st.Errors > 0 {
		why = append(why, fmt.Sprintf("%d errors", st.Errors))
	}
	if st.Unprocessed > 0 {
		why = append(why, fmt.Sprintf("%d payments given up", st.Unprocessed))
	}
	if st.Achieved < rate*(1-MaxBehind) {
		why = append(why, fmt.Sprintf("achieved %.0f/s < %.0f%% of offered", st.Achieved, 100*(1-MaxBehind)))
	}
	st.OK = len(why) == 0
	st.Reason = strings.Join(why, ", ")
	return st
}

// sweepResult is what a sweep found.
type sweepResult struct {
	// Steps are every step run, in order; Runs the runs that decided a
	// rate (a failed step that was retried is in Steps only).
	Steps []planStep
	Runs  []results.Run
	// Max is the highest offered rate that held (0: none did); Achieved
	// is the achieved rate at that step.
	Max, Achieved float64
	// LimitedBy is why no higher rate was found: the failing step's
	// reason, "--max-rate reached" or "step limit".
	LimitedBy string
}

// sweep finds the highest sustainable rate: it ramps the offered rate by
// cfg.factor from cfg.start until a step fails (or cfg.maxRate holds),
// walks down by the same factor (at most maxWalkDown steps) when the very
// first step fails, then
// bisects (geometric mean) cfg.refine times between the highest rate that
// held and the lowest that failed. It assumes a rate that fails would fail
// at any higher rate. At most MaxSweepSteps rates are tried (a confirming
// re-run does not count); it stops early, with what it has, when ctx is
// done or a step returns an error.
func sweep(ctx context.Context, cfg sweepConfig, run stepFunc) (sweepResult, error) {
	var res sweepResult
	lo, hi := 0.0, math.Inf(1)
	hiReason := ""
	tried := 0
	once := func(rate float64) (planStep, error) {
		r, err := run(ctx, rate)
		if err == nil && (r.Summary.Interrupted || ctx.Err() != nil) {
			err = ctx.Err()
		}
		if err != nil {
			return planStep{}, err
		}
		res.Runs = append(res.Runs, r)
		st := judge(&r.Summary, rate, cfg.slo)
		res.Steps = append(res.Steps, st)
		return st, nil
	}
	try := func(rate float64) (bool, error) {
		tried++
		st, err := once(rate)
		if err == nil && !st.OK && cfg.confirm {
			res.Steps[len(res.Steps)-1].Retried = true
			res.Runs = res.Runs[:len(res.Runs)-1]
			st, err = once(rate)
		}
		if err != nil {
			return false, err
		}
		if st.OK && rate > lo {
			lo, res.Achieved = rate, st.Achieved
		} else if !st.OK && rate < hi {
			hi, hiReason = rate, st.Reason
		}
		return st.OK, nil
	}
	room := func() bool { return tried < MaxSweepSteps }
	finish := func(err error) (sweepResult, error) {
		res.Max = lo
		switch {
		case !math.IsInf(hi, 1):
			res.LimitedBy = hiReason
		case cfg.maxRate > 0 && lo >= cfg.maxRate:
			res.LimitedBy = "--max-rate reached"
		default:
			res.LimitedBy = "step limit"
		}
		return res, err
	}

	// Ramp up until a step fails.
	for rate := cfg.start; room(); rate = roundRate(rate * cfg.factor) {
		if cfg.maxRate > 0 && rate > cfg.maxRate {
			rate = cfg.maxRate
		}
		ok, err := try(rate)
		if err != nil {
			return finish(err)
		}
		if !ok || (cfg.maxRate > 0 && rate >= cfg.maxRate) {
			break
		}
	}
	// The first step failed: walk down until one holds.
	rate := hi
	for i := 0; i < maxWalkDown && lo == 0 && room(); i++ {
		if rate = roundRate(rate / cfg.factor); rate < minSweepRate {
			break
		}
		if _, err := try(rate); err != nil {
			return finish(err)
		}
	}
	// Bisect between the last rate that held and the first that failed.
	for i := 0; i < cfg.refine && lo > 0 && !math.IsInf(hi, 1) && room(); i++ {
		mid := roundRate(math.Sqrt(lo * hi))
		if mid <= lo || mid >= hi {
			break
		}
		if _, err := try(mid); err != nil {
			return finish(err)
		}
	}
	return finish(nil)
}

// roundRate rounds a rate to a whole number of payments/s (to 0.1 under
// 10/s), so steps have readable names.
func roundRate(r float64) float64 {
	if r < 10 {
		return math.Round(r*10) / 10
	}
	return math.Round(r)
}

// planResult is one strategy's line of the plan.
type planResult struct {
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
	// Fits and Headroom (MaxRate ÷ target) are set with --target-rate;
	// a strategy without exclusion never fits.
	Fits     bool    `json:"fits"`
	Headroom float64 `json:"headroom"`
	// Cost is the latency at the step nearest the target (or, without
	// one, at MaxRate).
	Cost planCost `json:"cost"`
	// Risks says what the strategy risks under faults (see RisksFrom).
	Risks string `json:"risks"`
	// SweepUnsafe counts safety violations seen during the fault-free
	// sweep itself; non-zero only for strategies without exclusion.
	SweepUnsafe int64      `json:"sweep_unsafe"`
	Steps       []planStep `json:"steps"`
	// Error is why the sweep stopped early, if it did.
	Error string `json:"error,omitempty"`
}

// planCost is the latency a strategy costs at one offered rate.
type planCost struct {
	AtRate       float64 `json:"at_rate"`
	AcquireP50Ns int64   `json:"acquire_p50_ns"`
	AcquireP99Ns int64   `json:"acquire_p99_ns"`
	TotalP99Ns   int64   `json:"total_p99_ns"`
}

// planReport is plan.json.
type planReport struct {
	TargetRate     float64        `json:"target_rate"`
	SLOP99Ns       int64          `json:"slo_p99_ns"`
	MaxBehind      float64        `json:"max_behind"`
	StepDurationNs int64          `json:"step_duration_ns"`
	StepWarmupNs   int64          `json:"step_warmup_ns"`
	RisksFrom      string         `json:"risks_from"`
	Params         results.Params `json:"params"`
	Strategies     []planResult   `json:"strategies"`
	Interrupted    bool           `json:"interrupted,omitempty"`
}

// cost picks the step whose latency a strategy costs at target: the step
// at the target, else the nearest (by ratio) that held, else the nearest.
// Without a target it is the highest step that held. Failed steps that
// were retried do not count: their retry decided.
func cost(steps []planStep, target float64) planCost {
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
		return planCost{}
	}
	st := steps[i]
	return planCost{AtRate: st.Rate, AcquireP50Ns: st.AcquireP50Ns, AcquireP99Ns: st.AcquireP99Ns, TotalP99Ns: st.TotalP99Ns}
}

// planOptions are the parsed flags of `lockbench plan`.
type planOptions struct {
	names    []string
	sc       loadgen.Scenario // the sweep's scenario; Rate varies per step
	ef       endpointFlags
	target   float64 // payments/s; 0: none
	cfg      sweepConfig
	out      string
	asJSON   bool
	verdicts string
}

// parsePlan parses the flags of `lockbench plan`.
func parsePlan(args []string, stdout, stderr io.Writer) (planOptions, error) {
	o := planOptions{cfg: sweepConfig{factor: DefaultRateStep, slo: DefaultSLOP99}}
	fs := newFlagSet("plan", stderr)
	var sf scenarioFlags
	sf.register(fs)
	o.ef.register(fs)
	strategyList := fs.String("strategy", "", "comma-separated strategies, or all (default: every cross-instance lock, i.e. all but nolock and mutex)")
	fs.StringVar(&o.out, "out", "", "run directory (default out/plan-DATE-TIME)")
	fs.BoolVar(&o.asJSON, "json", false, "print plan.json to stdout instead of the table")
	fs.StringVar(&o.verdicts, "verdicts", "", "verdicts.json from `lockbench verdicts`: risks under faults as measured (default: as SPEC §4 expects)")
	rateF := func(name, help string, p *float64) {
		fs.Func(name, help, func(v string) error {
			r, err := strconv.ParseFloat(v, 64)
			if err != nil || r <= 0 || math.IsInf(r, 0) {
				return errors.New("want payments per second > 0")
			}
			*p = r
			return nil
		})
	}
	rateF("target-rate", "payments/s the system must sustain; the plan says which strategies fit it (default none)", &o.target)
	rateF("start-rate", fmt.Sprintf("first offered rate (default: --target-rate ÷ --rate-step², or %g)", DefaultStartRate), &o.cfg.start)
	rateF("max-rate", "highest rate to offer (default no cap)", &o.cfg.maxRate)
	fs.Func("slo-p99", fmt.Sprintf("p99 total latency a sustainable rate must stay under (default %s)", DefaultSLOP99), func(v string) error {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return errors.New("want a duration > 0 such as 20ms")
		}
		o.cfg.slo = d
		return nil
	})
	fs.Func("rate-step", fmt.Sprintf("factor between ramp steps, > 1 (default %g)", DefaultRateStep), func(v string) error {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f <= 1 || f > 100 {
			return errors.New("want a factor > 1 such as 2 or 1.5")
		}
		o.cfg.factor = f
		return nil
	})
	fs.IntVar(&o.cfg.refine, "refine", DefaultRefine, "bisection steps after the first failing rate, 0..6")
	fs.BoolVar(&o.cfg.confirm, "confirm", true, "re-run a failing step once before believing it")
	stepDur := fs.Duration("step-duration", DefaultStepDuration, "measured length of each step")
	stepWarmup := fs.Duration("step-warmup", DefaultStepWarmup, "unrecorded warmup before each step")
	if err := parseFlags(fs, args, stdout); err != nil {
		return o, err
	}
	if err := noSweepFlags(fs); err != nil {
		return o, err
	}
	switch {
	case o.cfg.refine < 0 || o.cfg.refine > 6:
		return o, usageErr("--refine: want 0..6, got %d", o.cfg.refine)
	case *stepDur <= 0:
		return o, usageErr("--step-duration: want a duration > 0 such as 2s, got %s", *stepDur)
	case *stepWarmup < 0:
		return o, usageErr("--step-warmup: want a duration ≥ 0 such as 500ms, got %s", *stepWarmup)
	case o.cfg.maxRate > 0 && o.cfg.start > o.cfg.maxRate:
		return o, usageErr("--start-rate: want ≤ --max-rate (%g), got %g", o.cfg.maxRate, o.cfg.start)
	}
	if o.cfg.start == 0 {
		// With a target, start two steps below it so the target is a step.
		o.cfg.start = DefaultStartRate
		if o.target > 0 {
			o.cfg.start = roundRate(o.target / (o.cfg.factor * o.cfg.factor))
		}
	}
	var err error
	if o.names, err = planStrategies(*strategyList); err != nil {
		return o, err
	}
	if o.sc, err = sf.scenario(); err != nil {
		return o, err
	}
	o.sc.Name = results.ScenarioSweep
	o.sc.Payments, o.sc.Duration, o.sc.Warmup, o.sc.Rate = 0, *stepDur, *stepWarmup, o.cfg.start
	return o, o.sc.Validate()
}

// runPlan is `lockbench plan`: a rate sweep per strategy, then which fit a
// target rate, with what headroom, latency and risk. The sweep's runs go
// to the run directory like any run's (scenario "sweep": chart 3), plus
// plan.json, rewritten after each strategy.
func runPlan(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parsePlan(args, stdout, stderr)
	if err != nil {
		return err
	}
	risks, risksFrom, err := loadRisks(o.verdicts)
	if err != nil {
		return err
	}
	dir, err := newRunDir(o.out, "plan", args)
	if err != nil {
		return err
	}
	sess, err := openSession(ctx, o.ef, needs(o.names, o.sc), servers.Options{}, stderr)
	if err != nil {
		return err
	}
	defer sess.Close()

	rep := planReport{
		TargetRate: o.target, SLOP99Ns: int64(o.cfg.slo), MaxBehind: MaxBehind,
		StepDurationNs: int64(o.sc.Duration), StepWarmupNs: int64(o.sc.Warmup),
		RisksFrom: risksFrom, Params: paramsOf(o.sc),
	}
	planPath := filepath.Join(dir.dir, PlanFile)
	var errs []error
	for _, name := range o.names {
		if ctx.Err() != nil {
			break
		}
		step := func(ctx context.Context, rate float64) (results.Run, error) {
			sc := o.sc
			sc.Rate = rate
			return sess.run(ctx, name, sc, nil)
		}
		sw, err := sweep(ctx, o.cfg, step)
		pr := planOf(name, o, sw, risks)
		switch {
		case ctx.Err() != nil:
			pr.LimitedBy = "interrupted"
		case err != nil:
			pr.Error = err.Error()
			errs = append(errs, err)
		}
		rep.Strategies = append(rep.Strategies, pr)
		if err := addRuns(dir, sw.Runs); err != nil {
			errs = append(errs, err)
		}
		if err := writePlan(planPath, rep); err != nil {
			return err
		}
	}
	if ctx.Err() != nil {
		rep.Interrupted = true
		if err := writePlan(planPath, rep); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "interrupted: partial plan in %s\n", dir.dir)
	}
	if o.asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return err
		}
	} else {
		printPlan(stdout, rep, o.cfg)
		fmt.Fprintf(stdout, "\nrun directory: %s (%s", dir.dir, PlanFile)
		if _, err := os.Stat(filepath.Join(dir.dir, "latency-throughput.png")); err == nil {
			fmt.Fprint(stdout, ", latency-throughput.png")
		}
		fmt.Fprintln(stdout, ", report.md)")
	}
	return errors.Join(errs...)
}

// planOf is one strategy's line of the plan, from its sweep.
func planOf(name string, o planOptions, sw sweepResult, risks riskFunc) planResult {
	info, _ := strategies.Lookup(name)
	fenced := o.sc.Fencing && info.Fencing
	pr := planResult{
		Strategy: name, Exclusion: info.CrossProcess, Fencing: fenced,
		MaxRate: sw.Max, MaxAchieved: sw.Achieved, LimitedBy: sw.LimitedBy,
		Cost: cost(sw.Steps, o.target), Risks: risks(name, fenced, info.CrossProcess),
		Steps: sw.Steps,
	}
	if o.target > 0 {
		pr.Headroom = sw.Max / o.target
		pr.Fits = info.CrossProcess && sw.Max >= o.target
	}
	for _, st := range sw.Steps {
		pr.SweepUnsafe += st.Unsafe
	}
	return pr
}

// sweepOwned are the scenario flags the sweep sets itself.
var sweepOwned = map[string]string{
	"rate":     "the sweep sets the offered rate; use --start-rate, --rate-step and --max-rate",
	"payments": "each step runs for --step-duration",
	"duration": "each step runs for --step-duration",
	"warmup":   "use --step-warmup",
	"name":     `the sweep's runs are named "sweep" (chart 3 finds them by that name)`,
}

// noSweepFlags rejects scenario flags that the sweep owns.
func noSweepFlags(fs *flag.FlagSet) error {
	var err error
	fs.Visit(func(f *flag.Flag) {
		if why, ok := sweepOwned[f.Name]; ok && err == nil {
			err = usageErr("--%s: not accepted by plan: %s", f.Name, why)
		}
	})
	return err
}

// planStrategies is the --strategy list of plan: by default every
// strategy that excludes across instances. nolock and mutex run only when
// named (or with all), and are marked as giving no exclusion: the rate
// they sustain is the harness's and the store's, not a lock's.
func planStrategies(v string) ([]string, error) {
	if v != "" {
		return parseStrategies(v)
	}
	var out []string
	for _, info := range strategies.All() {
		if info.CrossProcess {
			out = append(out, info.Name)
		}
	}
	return out, nil
}

// addRuns appends one strategy's sweep to the run directory and rewrites
// it once (not once per step: the charts and logs are redrawn each time).
func addRuns(d *runDir, runs []results.Run) error {
	if len(runs) == 0 {
		return nil
	}
	d.runs = append(d.runs, runs[:len(runs)-1]...)
	return d.add(runs[len(runs)-1])
}

// paramsOf is the scenario's knobs for plan.json (the rate varies).
func paramsOf(sc loadgen.Scenario) results.Params {
	return results.Params{
		Instances: sc.Instances, Workers: sc.Workers, DeliveriesEach: sc.Deliveries,
		Accounts: sc.Accounts, AccountDist: sc.AccountDist.String(), LockKey: sc.LockKey,
		Hold: sc.Hold.String(), TTLNs: int64(sc.TTL), Store: sc.Store,
		InstanceMode: sc.InstanceMode, Seed: sc.Seed,
	}
}

// writePlan writes plan.json atomically (temporary file, then rename).
func writePlan(path string, rep planReport) error {
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".plan-*.json")
	if err != nil {
		return err
	}
	_, err = tmp.Write(append(b, '\n'))
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
	}
	return err
}

// riskFunc says what a strategy risks under faults.
type riskFunc func(strategy string, fenced, exclusion bool) string

// loadRisks returns the risks from a verdicts.json file, or (no file) the
// expectations of SPEC §4, and a note saying which.
func loadRisks(path string) (riskFunc, string, error) {
	if path == "" {
		return expectedRisks, "expected (SPEC §4); pass --verdicts FILE for measured risks", nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, "", usageErr("--verdicts: cannot read %s: %v", path, errors.Unwrap(err))
	}
	defer f.Close()
	ss, err := results.ReadJSON(f)
	if err != nil {
		return nil, "", usageErr("--verdicts: %s is not a verdicts.json: %s", path, oneLine(err.Error()))
	}
	return func(name string, fenced, _ bool) string { return measuredRisks(ss, name, fenced) }, "measured: " + path, nil
}

// measuredRisks summarises the verdict rows of one strategy (with the
// plan's fencing when the file has it): the faults that made it unsafe,
// and those under which it processed fewer than 99% of payments.
func measuredRisks(ss []results.Summary, name string, fenced bool) string {
	var rows []results.Summary
	for _, pass := range []bool{true, false} {
		for _, s := range ss {
			if s.Strategy == name && s.HasFault() && (!pass || s.Fencing == fenced) {
				rows = append(rows, s)
			}
		}
		if len(rows) > 0 {
			break
		}
	}
	if len(rows) == 0 {
		return "not in the verdicts file"
	}
	var unsafe, unavailable []string
	for _, s := range rows {
		s.Finish() // trust the counters, not the file's derived fields
		if s.Unsafe || s.UnsafeCount() > 0 {
			unsafe = append(unsafe, fmt.Sprintf("%s (%d)", s.Fault, s.UnsafeCount()))
		} else if s.Availability < 0.99 {
			unavailable = append(unavailable, fmt.Sprintf("%s (%.0f%% processed)", s.Fault, 100*s.Availability))
		}
	}
	var parts []string
	if len(unsafe) > 0 {
		parts = append(parts, "unsafe under "+strings.Join(unsafe, ", "))
	}
	if len(unavailable) > 0 {
		parts = append(parts, "unavailable under "+strings.Join(unavailable, ", "))
	}
	if len(parts) == 0 {
		return fmt.Sprintf("safe and available under all %d faults run", len(rows))
	}
	return strings.Join(parts, "; ")
}

// expectedRisks is SPEC §4 as one line per strategy: what each fault is
// expected to break.
func expectedRisks(name string, fenced, exclusion bool) string {
	switch name {
	case "nolock":
		return "no lock: double-processes every duplicate delivery"
	case "mutex":
		return "no exclusion across instances: double-processes duplicates sent to two instances"
	case "setnx":
		return "pause/slow past TTL: double-processing; kill-node: unavailable (one node)"
	case "redlock":
		return "pause/slow past TTL, restart-node, clock-jump: can grant twice; survives kill-node (quorum)"
	}
	stale := "pause past TTL: double-processing"
	if fenced {
		stale = "pause past TTL: stale writes rejected by the store (fenced)"
	}
	switch name {
	case "fencing":
		return stale + "; kill-node: unavailable (one node)"
	case "etcd":
		return stale + "; kill-node: unavailable without quorum"
	case "pg-onconflict":
		return stale + "; Postgres down: unavailable"
	}
	if !exclusion {
		return "no exclusion across instances"
	}
	return "unknown: run lockbench verdicts"
}

// printPlan writes the plan table.
func printPlan(w io.Writer, rep planReport, cfg sweepConfig) {
	p := rep.Params
	fmt.Fprintf(w, "plan: %d instances × %d workers, %d deliveries, %d accounts (%s), lock on %s, hold %s, store %s\n",
		p.Instances, p.Workers, p.DeliveriesEach, p.Accounts, p.AccountDist, p.LockKey, p.Hold, p.Store)
	fmt.Fprintf(w, "sweep: open loop from %.0f/s ×%g, %s steps (+%s warmup); a rate holds with p99 total ≤ %s, no errors, ≤ %.0f%% behind",
		cfg.start, cfg.factor, human(rep.StepDurationNs), human(rep.StepWarmupNs), human(rep.SLOP99Ns), 100*rep.MaxBehind)
	if cfg.confirm {
		fmt.Fprint(w, " (a failing rate is run twice)")
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "risks: %s\n\n", rep.RisksFrom)

	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	target := rep.TargetRate
	head := "STRATEGY\tMAX PAY/S\tLIMITED BY"
	if target > 0 {
		head += fmt.Sprintf("\tFITS %.0f/s\tHEADROOM", target)
	}
	head += "\tACQUIRE p50 / p99\tAT\tRISKS UNDER FAULTS"
	fmt.Fprintln(tw, head)
	var fit, nofit, noExcl []string
	for _, r := range rep.Strategies {
		name := r.Strategy
		if !r.Exclusion {
			name += " (no exclusion)"
			noExcl = append(noExcl, r.Strategy)
		}
		maxRate := "< " + strconv.FormatFloat(minRateTried(r.Steps), 'f', -1, 64)
		if r.MaxRate > 0 {
			maxRate = fmt.Sprintf("%.0f", r.MaxRate)
		}
		limited := r.LimitedBy
		if r.Error != "" {
			limited = "error: " + oneLine(r.Error)
		}
		line := fmt.Sprintf("%s\t%s\t%s", name, maxRate, limited)
		if target > 0 {
			verdict := "no"
			switch {
			case !r.Exclusion:
				verdict = "not a lock"
			case r.Fits:
				verdict = "yes"
				fit = append(fit, fmt.Sprintf("%s (%.1f×)", r.Strategy, r.Headroom))
			default:
				nofit = append(nofit, r.Strategy)
			}
			line += fmt.Sprintf("\t%s\t%.2f×", verdict, r.Headroom)
		}
		c := r.Cost
		at := "-"
		if c.AtRate > 0 {
			at = fmt.Sprintf("%.0f/s", c.AtRate)
		}
		risk := r.Risks
		if r.SweepUnsafe > 0 {
			risk = fmt.Sprintf("UNSAFE in the sweep (%d); ", r.SweepUnsafe) + risk
		}
		line += fmt.Sprintf("\t%s / %s\t%s\t%s", human(c.AcquireP50Ns), human(c.AcquireP99Ns), at, risk)
		fmt.Fprintln(tw, line)
	}
	_ = tw.Flush()
	if target > 0 {
		fmt.Fprintln(w)
		if len(fit) > 0 {
			fmt.Fprintf(w, "fit %.0f payments/s: %s\n", target, strings.Join(fit, ", "))
		} else {
			fmt.Fprintf(w, "no lock sustained %.0f payments/s within the SLO\n", target)
		}
		if len(nofit) > 0 {
			fmt.Fprintf(w, "do not fit: %s\n", strings.Join(nofit, ", "))
		}
	}
	if len(noExcl) > 0 {
		fmt.Fprintf(w, "%s exclude nobody across instances: their rate is the harness's and the store's, for comparison only\n", strings.Join(noExcl, " and "))
	}
}

func minRateTried(steps []planStep) float64 {
	m := 0.0
	for i, st := range steps {
		if i == 0 || st.Rate < m {
			m = st.Rate
		}
	}
	return m
}

// human formats nanoseconds for the screen with about three significant
// figures: 850µs, 1.25ms, 31.4ms.
func human(ns int64) string {
	if ns <= 0 {
		return "-"
	}
	v, unit := float64(ns), "ns"
	for _, u := range []struct {
		div  float64
		name string
	}{{1e9, "s"}, {1e6, "ms"}, {1e3, "µs"}} {
		if float64(ns) >= u.div {
			v, unit = float64(ns)/u.div, u.name
			break
		}
	}
	switch {
	case v < 10:
		return strconv.FormatFloat(v, 'f', 2, 64) + unit
	case v < 100:
		return strconv.FormatFloat(v, 'f', 1, 64) + unit
	}
	return strconv.FormatFloat(v, 'f', 0, 64) + unit
}
