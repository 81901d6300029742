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
	"time"

	"github.com/lockbench/lockbench/bench/faults"
	"github.com/lockbench/lockbench/internal/atomicfile"
	"github.com/lockbench/lockbench/loadgen"
	"github.com/lockbench/lockbench/plan"
	"github.com/lockbench/lockbench/results"
	"github.com/lockbench/lockbench/servers"
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
	names    []string
	sc       loadgen.Scenario // the sweep's scenario; Rate varies per step
	ef       endpointFlags
	target   float64 // payments/s; 0: none
	cfg      plan.Config
	out      string
	asJSON   bool
	verdicts string
}

// parsePlan parses the flags of `lockbench plan`.
func parsePlan(args []string, stdout, stderr io.Writer) (planOptions, error) {
	o := planOptions{cfg: plan.Config{Factor: plan.DefaultRateStep, SLO: plan.DefaultSLOP99}}
	fs := newFlagSet("plan", stderr)
	var sf scenarioFlags
	sf.register(fs)
	o.ef.register(fs)
	strategyList := fs.String("strategy", "", "comma-separated strategies, or all (default: every cross-instance lock, i.e. all but nolock and mutex)")
	fs.StringVar(&o.out, "out", "", "run directory (default out/plan-DATE-TIME)")
	fs.BoolVar(&o.asJSON, "json", false, "print plan.json to stdout instead of the table")
	fs.StringVar(&o.verdicts, "verdicts", "", "verdicts.json from `lockbench verdicts`: risks under faults as measured (default: as expected from each strategy's registry entry)")
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
	rateF("start-rate", fmt.Sprintf("first offered rate (default: --target-rate ÷ --rate-step², or %g)", plan.DefaultStartRate), &o.cfg.Start)
	rateF("max-rate", "highest rate to offer (default no cap)", &o.cfg.MaxRate)
	fs.Func("slo-p99", fmt.Sprintf("p99 total latency a sustainable rate must stay under (default %s)", plan.DefaultSLOP99), func(v string) error {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return errors.New("want a duration > 0 such as 20ms")
		}
		o.cfg.SLO = d
		return nil
	})
	fs.Func("rate-step", fmt.Sprintf("factor between ramp steps, > 1 (default %g)", plan.DefaultRateStep), func(v string) error {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f <= 1 || f > 100 {
			return errors.New("want a factor > 1 such as 2 or 1.5")
		}
		o.cfg.Factor = f
		return nil
	})
	fs.IntVar(&o.cfg.Refine, "refine", plan.DefaultRefine, "bisection steps after the first failing rate, 0..6")
	fs.BoolVar(&o.cfg.Confirm, "confirm", true, "re-run a failing step once before believing it")
	stepDur := fs.Duration("step-duration", DefaultStepDuration, "measured length of each step")
	stepWarmup := fs.Duration("step-warmup", DefaultStepWarmup, "unrecorded warmup before each step")
	if err := parseFlags(fs, args, stdout); err != nil {
		return o, err
	}
	if err := noSweepFlags(fs); err != nil {
		return o, err
	}
	switch {
	case o.cfg.Refine < 0 || o.cfg.Refine > 6:
		return o, usageErr("--refine: want 0..6, got %d", o.cfg.Refine)
	case *stepDur <= 0:
		return o, usageErr("--step-duration: want a duration > 0 such as 2s, got %s", *stepDur)
	case *stepWarmup < 0:
		return o, usageErr("--step-warmup: want a duration ≥ 0 such as 500ms, got %s", *stepWarmup)
	case o.cfg.MaxRate > 0 && o.cfg.Start > o.cfg.MaxRate:
		return o, usageErr("--start-rate: want ≤ --max-rate (%g), got %g", o.cfg.MaxRate, o.cfg.Start)
	}
	if o.cfg.Start == 0 {
		o.cfg.Start = plan.StartRate(o.target, o.cfg.Factor)
	}
	var err error
	if o.names, err = planStrategies(*strategyList); err != nil {
		return o, err
	}
	if o.sc, err = sf.scenario(); err != nil {
		return o, err
	}
	o.sc.Name = results.ScenarioSweep
	o.sc.Payments, o.sc.Duration, o.sc.Warmup, o.sc.Rate = 0, *stepDur, *stepWarmup, o.cfg.Start
	return o, o.sc.Validate()
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
	risks, risksFrom, err := loadRisks(o.verdicts)
	if err != nil {
		return err
	}
	dir, err := newRunDir(o.out, "plan", args)
	if err != nil {
		return err
	}
	defer dir.closeAtExit(&err)
	sess, err := openSession(ctx, o.ef, needs(o.names, o.sc), servers.Options{}, stderr)
	if err != nil {
		return err
	}
	defer sess.Close()

	rep := plan.Report{
		TargetRate: o.target, SLOP99Ns: int64(o.cfg.SLO), MaxBehind: plan.MaxBehind,
		StepDurationNs: int64(o.sc.Duration), StepWarmupNs: int64(o.sc.Warmup),
		RisksFrom: risksFrom, Params: paramsOf(o.sc),
	}
	planPath := filepath.Join(dir.dir, plan.File)
	var errs []error
	for _, name := range o.names {
		if ctx.Err() != nil {
			break
		}
		step := func(ctx context.Context, rate float64) (results.Run, error) {
			sc := o.sc
			sc.Rate = rate
			return sess.run(ctx, name, sc, faults.Spec{})
		}
		sw, err := plan.Sweep(ctx, o.cfg, step)
		info, _ := strategies.Lookup(name) // planStrategies checked the name
		line := plan.LineOf(info, o.sc.Fencing, o.target, sw, risks)
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
	if o.asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return err
		}
	} else {
		plan.Print(stdout, rep, o.cfg)
		fmt.Fprintf(stdout, "\nrun directory: %s (%s", dir.dir, plan.File)
		chart := filepath.Join(results.ChartsDir, "latency-throughput.png")
		if _, err := os.Stat(filepath.Join(dir.dir, chart)); err == nil {
			fmt.Fprint(stdout, ", "+chart)
		}
		fmt.Fprintln(stdout, ", report.md)")
	}
	return errors.Join(errs...)
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

// addRuns appends one strategy's sweep to the run directory and writes its
// data files once, not once per step (each write rewrites every run's).
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
	f, err := os.Open(path)
	if err != nil {
		return nil, "", usageErr("--verdicts: cannot read %s: %v", path, errors.Unwrap(err))
	}
	defer f.Close()
	ss, err := results.ReadJSON(f)
	if err != nil {
		return nil, "", usageErr("--verdicts: %s is not a verdicts.json: %s", path, oneLine(err.Error()))
	}
	return plan.Measured(ss), "measured: " + path, nil
}
