package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/lockbench/lockbench/faults"
	"github.com/lockbench/lockbench/internal/atomicfile"
	"github.com/lockbench/lockbench/loadgen"
	"github.com/lockbench/lockbench/plan"
	"github.com/lockbench/lockbench/results"
	"github.com/lockbench/lockbench/strategies"
)

// Step defaults of `lockbench plan`; the sweep's own (SLO, rate step,
// refinement, start rate) are package plan's.
const (
	// DefaultStepDuration is the measured length of one step: 2s.
	DefaultStepDuration = 2 * time.Second
	// DefaultStepWarmup is the unrecorded start of each step: 500ms.
	DefaultStepWarmup = 500 * time.Millisecond
)

// planOptions are the parsed flags of `lockbench plan`.
type planOptions struct {
	// cells are one per strategy, each a sweep of sc's rate.
	cells    []cell
	sc       loadgen.Scenario // the sweep's scenario; Rate varies per step
	ef       endpointFlags
	metrics  metricsFlag
	target   float64 // payments/s; 0: none
	cfg      plan.Config
	out      string
	asJSON   bool
	dryRun   bool
	verdicts string
	// risks are those of --verdicts, or the registry's expectations;
	// risksFrom says which.
	risks     plan.Risks
	risksFrom string
}

// Ranges of plan's own flags (the scenario's are loadgen's): rates in
// 1..loadgen.MaxRate payments/s, an SLO up to the longest latency the
// histograms hold, steps of at most an hour.
const (
	minPlanRate     = 1
	maxPlanSLO      = time.Duration(results.MaxLatencyNs)
	maxStepDuration = time.Hour
	maxStepWarmup   = 10 * time.Minute
	maxPlanRateStep = 100
	maxPlanRefine   = 6
)

// parsePlan parses the flags of `lockbench plan`.
func parsePlan(args []string, stdout, stderr io.Writer) (planOptions, error) {
	o := planOptions{cfg: plan.Config{Factor: plan.DefaultRateStep, SLO: plan.DefaultSLOP99}}
	fs := newFlagSet("plan", stderr)
	var sf scenarioFlags
	sf.register(fs)
	o.ef.register(fs)
	o.metrics.register(fs)
	strategyList := fs.String("strategy", "", "comma-separated strategies, or all (default: every cross-instance lock, i.e. all but nolock and mutex)")
	fs.StringVar(&o.out, "out", "", "run directory (default out/plan-DATE-TIME)")
	fs.BoolVar(&o.asJSON, "json", false, "print plan.json to stdout instead of the table")
	fs.BoolVar(&o.dryRun, "dry-run", false, "print the sweeps that would run, their first rates and an estimated time, and run nothing")
	fs.StringVar(&o.verdicts, "verdicts", "", "verdicts.json from `lockbench verdicts`: risks under faults as measured (default: as expected from each strategy's registry entry)")
	o.registerSweep(fs)
	fs.IntVar(&o.cfg.Refine, "refine", plan.DefaultRefine, fmt.Sprintf("bisection steps after the first failing rate, 0..%d", maxPlanRefine))
	fs.BoolVar(&o.cfg.Confirm, "confirm", true, "re-run a failing step once before believing it (with --trials above 1, the trials decide)")
	trials := trialsFlag(fs)
	stepDur := fs.Duration("step-duration", DefaultStepDuration, fmt.Sprintf("measured length of each step, > 0 and ≤ %s", maxStepDuration))
	stepWarmup := fs.Duration("step-warmup", DefaultStepWarmup, fmt.Sprintf("unrecorded warmup before each step, 0s..%s", maxStepWarmup))
	if err := parseFlags(fs, args, stdout); err != nil {
		return o, err
	}
	if err := noSweepFlags(fs); err != nil {
		return o, err
	}
	if err := sf.checkAgentsMode(&o.ef); err != nil {
		return o, err
	}
	o.cfg.Trials = *trials
	switch {
	case o.cfg.Refine < 0 || o.cfg.Refine > maxPlanRefine:
		return o, usageErr("--refine: want 0..%d, got %d", maxPlanRefine, o.cfg.Refine)
	case *stepDur <= 0 || *stepDur > maxStepDuration:
		return o, usageErr("--step-duration: want a duration > 0 and ≤ %s such as 2s, got %s", maxStepDuration, *stepDur)
	case *stepWarmup < 0 || *stepWarmup > maxStepWarmup:
		return o, usageErr("--step-warmup: want a duration in 0s..%s such as 500ms, got %s", maxStepWarmup, *stepWarmup)
	case o.cfg.MaxRate > 0 && o.cfg.Start > o.cfg.MaxRate:
		return o, usageErr("--start-rate: want ≤ --max-rate (%g), got %g", o.cfg.MaxRate, o.cfg.Start)
	}
	if o.cfg.Start == 0 {
		o.cfg.Start = plan.StartRate(o.target, o.cfg.Factor)
	}
	infos, err := planStrategies(*strategyList)
	if err != nil {
		return o, err
	}
	if o.sc, err = sf.scenario(); err != nil {
		return o, err
	}
	if err := sf.storeFor(infos, &o.sc); err != nil {
		return o, err
	}
	o.sc.Name = results.ScenarioSweep
	o.sc.Payments, o.sc.Duration, o.sc.Warmup, o.sc.Rate = 0, *stepDur, *stepWarmup, o.cfg.Start
	if err := o.sc.Validate(); err != nil {
		return o, err
	}
	// The highest step, when there is a cap, must fit too (memory).
	if o.cfg.MaxRate > 0 {
		top := stepFor(o.sc, o.cfg.MaxRate)
		if err := top.Validate(); err != nil {
			return o, err
		}
	}
	if _, err := o.ef.endpoints(); err != nil {
		return o, err
	}
	if err := o.ef.checkSequenced(&sf, o.sc); err != nil {
		return o, err
	}
	for _, info := range infos {
		o.cells = append(o.cells, cell{info: info, sc: o.sc})
	}
	o.risks, o.risksFrom, err = loadRisks(o.verdicts)
	return o, err
}

// registerSweep registers the sweep's rate and SLO flags on fs, into o.
func (o *planOptions) registerSweep(fs *flag.FlagSet) {
	rateF := func(name, help string, p *float64) {
		fs.Func(name, help, func(v string) error {
			r, err := strconv.ParseFloat(v, 64)
			if err != nil || !(r >= minPlanRate && r <= loadgen.MaxRate) { // NaN too
				return fmt.Errorf("want payments per second in %d..%d", minPlanRate, loadgen.MaxRate)
			}
			*p = r
			return nil
		})
	}
	rateF("target-rate", fmt.Sprintf("payments/s the system must sustain, %d..%d; the plan says which strategies fit it (default none)", minPlanRate, loadgen.MaxRate), &o.target)
	rateF("start-rate", fmt.Sprintf("first offered rate, %d..%d (default: --target-rate ÷ --rate-step², or %g)", minPlanRate, loadgen.MaxRate, plan.DefaultStartRate), &o.cfg.Start)
	rateF("max-rate", fmt.Sprintf("highest rate to offer, %d..%d (default no cap)", minPlanRate, loadgen.MaxRate), &o.cfg.MaxRate)
	fs.Func("slo-p99", fmt.Sprintf("p99 total latency a sustainable rate must stay under, > 0 and ≤ %s (default %s)", maxPlanSLO, plan.DefaultSLOP99), func(v string) error {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 || d > maxPlanSLO {
			return fmt.Errorf("want a duration > 0 and ≤ %s such as 20ms", maxPlanSLO)
		}
		o.cfg.SLO = d
		return nil
	})
	fs.Func("rate-step", fmt.Sprintf("factor between ramp steps, > 1 and ≤ %d (default %g)", maxPlanRateStep, plan.DefaultRateStep), func(v string) error {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || !(f > 1 && f <= maxPlanRateStep) {
			return fmt.Errorf("want a factor > 1 and ≤ %d such as 2 or 1.5", maxPlanRateStep)
		}
		o.cfg.Factor = f
		return nil
	})
}

// runPlan is `lockbench plan`: a rate sweep per strategy, then which fit a
// target rate, with what headroom, latency and risk. The sweep's runs go
// to the run directory like any run's (scenario "sweep": chart 3), plus
// plan.json, rewritten after each strategy.
func runPlan(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	o, err := parsePlan(args, stdout, stderr)
	if err != nil {
		return err
	}
	if o.dryRun {
		return printSweeps(stdout, o)
	}
	risks, risksFrom := o.risks, o.risksFrom
	// A plan's sweeps stop at the first rate a strategy cannot hold: at
	// most a few dozen runs a strategy.
	dir, err := newRunDir(o.out, "plan", args, outEstimate(32*len(o.cells), 0, false))
	if err != nil {
		return err
	}
	defer dir.closeAtExit(&err)
	need, opts := cellServers(o.cells)
	sess, err := openSession(ctx, o.ef, need, opts, stderr)
	if err != nil {
		return err
	}
	defer sess.Close()
	cells, err := sess.applicableCells(o.cells, stderr)
	if err != nil {
		return err
	}
	if err := sess.serveMetrics(o.metrics); err != nil {
		return err
	}
	dir.describe(ctx, sess, o.cfg.Trials, o.sc.Seed, false)

	rep := plan.Report{
		TargetRate: o.target, SLOP99Ns: int64(o.cfg.SLO), MaxBehind: plan.MaxBehind,
		StepDurationNs: int64(o.sc.Duration), StepWarmupNs: int64(o.sc.Warmup),
		RisksFrom: risksFrom, Params: planParams(o.sc),
	}
	planPath := filepath.Join(dir.dir, plan.File)
	var errs []error
	for _, c := range cells {
		if ctx.Err() != nil {
			break
		}
		step := func(ctx context.Context, rate float64, trial int) (results.Run, error) {
			return runTrial(ctx, sess, c.info, stepFor(c.sc, rate), c.spec, trial)
		}
		sw, err := plan.Sweep(ctx, o.cfg, step)
		line := plan.LineOf(c.info, c.sc.Fencing, o.target, sw, risks)
		switch {
		case ctx.Err() != nil:
			line.LimitedBy = "interrupted"
		case err != nil:
			line.Error = err.Error()
			errs = append(errs, err)
		}
		rep.Strategies = append(rep.Strategies, line)
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
	if err := dir.close(); err != nil {
		return err
	}
	if err := printPlan(stdout, o, rep, dir.dir); err != nil {
		return err
	}
	return errors.Join(errs...)
}

// printPlan writes the plan rep to stdout: JSON, or the table and where
// the run directory dir and its chart are.
func printPlan(stdout io.Writer, o planOptions, rep plan.Report, dir string) error {
	if o.asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	plan.Print(stdout, rep, o.cfg)
	fmt.Fprintf(stdout, "\nrun directory: %s (%s", dir, plan.File)
	chart := filepath.Join(results.ChartsDir, "latency-throughput.png")
	if _, err := os.Stat(filepath.Join(dir, chart)); err == nil {
		fmt.Fprint(stdout, ", "+chart)
	}
	fmt.Fprintln(stdout, ", report.md)")
	return nil
}

// printSweeps is plan's --dry-run: each strategy's sweep, the rates its
// ramp would offer while they hold, and the most it could run; it runs
// nothing and starts no server.
func printSweeps(w io.Writer, o planOptions) error {
	rates := plan.Ramp(o.cfg)
	most, lowest := plan.MostSteps(o.cfg)
	trials := max(o.cfg.Trials, 1)
	// The longest step is the lowest rate's (stepFor).
	each := estimate(stepFor(o.sc, lowest)) * time.Duration(most*trials)
	first := make([]string, 0, 6)
	for i, r := range rates {
		if i == 4 && len(rates) > 5 {
			first = append(first, "…", strconv.FormatFloat(rates[len(rates)-1], 'f', -1, 64))
			break
		}
		first = append(first, strconv.FormatFloat(r, 'f', -1, 64))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%-44s %-9s %6s %7s %9s\n", "sweep", "instances", "rates", "trials", "at most")
	for _, c := range o.cells {
		fmt.Fprintf(&b, "%-44s %-9s %6d %7d %9s\n", c.label(), c.sc.InstanceMode, most, trials, fmtEstimate(each))
	}
	fmt.Fprintf(&b, "\nramp (payments/s), while each rate holds: %s; then up to %d bisection steps below the first that fails\n", strings.Join(first, ", "), o.cfg.Refine)
	confirm := ""
	if o.cfg.Confirm && trials == 1 {
		confirm = ", and a failing rate once more to confirm it"
	}
	fmt.Fprintf(&b, "plan: %d sweeps, each at most %d rates × %d trials of %s%s: at most %s with server start-up (estimated; a sweep stops at the first rate it cannot hold; nothing was run)\n",
		len(o.cells), most, trials, fmtEstimate(estimate(stepFor(o.sc, rates[0]))), confirm, fmtEstimate(each*time.Duration(len(o.cells))+estimateServers))
	_, err := io.WriteString(w, b.String())
	return err
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
func planStrategies(v string) ([]strategies.Info, error) {
	if v != "" {
		return parseStrategies(v)
	}
	var out []strategies.Info
	for _, info := range strategies.All() {
		if info.CrossProcess {
			out = append(out, info)
		}
	}
	return out, nil
}

// addRuns appends one strategy's sweep to the run directory and writes its
// data files once, not once per step (each write rewrites every run's).
func addRuns(d *runDir, runs []results.Run) error {
	if len(runs) == 0 {
		return nil
	}
	d.runs = append(d.runs, runs[:len(runs)-1]...)
	return d.add(runs[len(runs)-1])
}

// planParams is the sweep's scenario for plan.json: the rate varies per
// step, and so does the duration of the slowest steps (stepFor).
func planParams(sc loadgen.Scenario) results.Params {
	p := paramsOf(sc, faults.Spec{})
	p.Rate = 0
	return p
}

// stepFor is the scenario of one step at rate: the sweep's, run at least
// long enough that its total latency has the samples a p99 needs
// (results.MinCount, with a tenth to spare for the warmup's edge and the
// pacer's rounding), so a low rate is never judged on a p99 it cannot
// measure.
func stepFor(sc loadgen.Scenario, rate float64) loadgen.Scenario {
	sc.Rate = rate
	need := 1.1 * float64(results.MinCount(results.StatP99)) / float64(sc.Deliveries)
	if d := time.Duration(need / rate * float64(time.Second)); d > sc.Duration {
		sc.Duration = d.Round(100 * time.Millisecond)
	}
	return sc
}

// writePlan writes plan.json atomically.
func writePlan(path string, rep plan.Report) error {
	return atomicfile.Write(path, func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	})
}

// loadRisks returns the risks from a verdicts.json file, or (no file) the
// expectations derived from the registry (plan.Expected), and a note saying
// which.
func loadRisks(path string) (plan.Risks, string, error) {
	if path == "" {
		return plan.Expected, "expected from the registry; pass --verdicts FILE for measured risks", nil
	}
	// Stat before Open: opening a FIFO would wait for a writer.
	if st, err := os.Stat(path); err == nil && !st.Mode().IsRegular() {
		return nil, "", usageErr("--verdicts: %q is not a regular file", path)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, "", usageErr("--verdicts: cannot read %q: %v", path, errors.Unwrap(err))
	}
	defer f.Close()
	ss, err := results.ReadJSON(f)
	if err != nil {
		return nil, "", usageErr("--verdicts: %s is not a verdicts.json: %s", path, oneLine(err.Error()))
	}
	return plan.Measured(ss), "measured: " + path, nil
}
