package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/lockbench/lockbench/faults"
	"github.com/lockbench/lockbench/loadgen"
	"github.com/lockbench/lockbench/report"
	"github.com/lockbench/lockbench/results"
	"github.com/lockbench/lockbench/strategies"
)

// runOptions are the parsed and checked input of `lockbench run`.
type runOptions struct {
	// cells are every strategy under each --fault spec, spec by spec.
	cells                []cell
	ef                   endpointFlags
	mf                   metricsFlag
	out, cpuProfile      string
	asJSON, failOnUnsafe bool
	trials               int
	history, dryRun      bool
}

// parseRun parses and checks the input of `lockbench run`, reading the
// files it names (--scenario, --from) and starting nothing.
func parseRun(args []string, stdout, stderr io.Writer) (o runOptions, err error) {
	fs := newFlagSet("run", stderr)
	var sf scenarioFlags
	var ef endpointFlags
	var mf metricsFlag
	sf.register(fs)
	ef.register(fs)
	mf.register(fs)
	strategyList := fs.String("strategy", "all", "comma-separated strategies (see `lockbench strategies`), or all")
	out := fs.String("out", "", "run directory (default out/run-DATE-TIME)")
	asJSON := fs.Bool("json", false, "print summary.json to stdout instead of the table")
	failOnUnsafe := fs.Bool("fail-on-unsafe", false, "exit 3 when any strategy lost safety (for CI)")
	faultSpec := faultsFlag(fs, "none", "fault to inject: "+faultHelp()+", one run per spec")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of lockbench itself to this file (to check the harness)")
	trials := trialsFlag(fs)
	history := historyFlag(fs)
	dryRun := fs.Bool("dry-run", false, "print the cells that would run, with an estimated time, and run nothing")
	from := fs.String("from", "", "run directory to take the scenario, strategy and fault from (its summary.json row --row); flags override them")
	row := fs.Int("row", 1, "with --from: the row of summary.json to run again, 1..its rows, 1 = the first")
	if err := parseFlags(fs, args, stdout); err != nil {
		return o, err
	}
	if err := sf.checkAgentsMode(&ef); err != nil {
		return o, err
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	base, err := fromRow(*from, *row, given, &sf, &ef, strategyList, faultSpec)
	if err != nil {
		return o, err
	}
	infos, err := parseStrategies(*strategyList)
	if err != nil {
		return o, err
	}
	sc, err := sf.scenarioOn(base)
	if err != nil {
		return o, err
	}
	if err := sf.storeFor(infos, &sc); err != nil {
		return o, err
	}
	specs, err := parseFaults(faultSpec.list())
	if err != nil {
		return o, err
	}
	cells, err := faultCells(specs, infos, sc, sf.intervalSet)
	if err != nil {
		return o, err
	}
	if _, err := ef.endpoints(); err != nil {
		return o, err
	}
	_, pgSync, _ := ef.pgLayout() // checked by endpoints
	for i := range cells {
		// The session's --redis-wait and --pg-sync, which runCases sets
		// per cell.
		cells[i].wait, cells[i].pgSync = ef.wait, pgSync
	}
	scs := make([]loadgen.Scenario, len(cells))
	for i, c := range cells {
		scs[i] = c.sc
	}
	if err := ef.checkSequenced(&sf, scs...); err != nil {
		return o, err
	}
	return runOptions{cells: cells, ef: ef, mf: mf, out: *out, cpuProfile: *cpuProfile,
		asJSON: *asJSON, failOnUnsafe: *failOnUnsafe, trials: *trials, history: *history, dryRun: *dryRun}, nil
}

// fromRow is the scenario `run --from DIR --row N` starts from: row N of
// DIR's summary.json, whose strategy, fault and store transport it takes
// where the flags do not give them; without --from, the default scenario.
func fromRow(from string, row int, given map[string]bool, sf *scenarioFlags, ef *endpointFlags, strategyList *string, faultSpec *faultValues) (loadgen.Scenario, error) {
	base := loadgen.DefaultScenario()
	if from == "" {
		if given["row"] {
			return base, usageErr("--row: only with --from DIR")
		}
		return base, nil
	}
	if sf.file != "" {
		return base, usageErr("--from: give --from or --scenario, not both")
	}
	s, err := rowOf(from, row)
	if err != nil {
		return base, err
	}
	fault := ""
	if base, fault, err = scenarioOfRow(s); err != nil {
		return base, err
	}
	if !given["strategy"] {
		*strategyList = s.Strategy
	}
	if !given["fault"] {
		faultSpec.vals = []string{fault}
	}
	if !given["store-transport"] && s.Params.StoreTransport != "" {
		ef.transport = s.Params.StoreTransport // the transport the row used
	}
	// The row's interval came from its own run: keep it unless given.
	sf.intervalSet = sf.intervalSet || base.Interval != 0
	return base, nil
}

// faultCells are every strategy under each --fault spec, on the scenario
// the spec adjusts (a spec with parameters, among several, in the
// variant); intervalSet: --interval was given.
func faultCells(specs []string, infos []strategies.Info, sc loadgen.Scenario, intervalSet bool) ([]cell, error) {
	var cells []cell
	for _, v := range specs {
		fspec, err := faults.Parse(v)
		if err != nil {
			return nil, err
		}
		sc, err := fspec.Adjust(sc)
		if err != nil {
			return nil, err
		}
		if fspec.Name != results.FaultNone && !intervalSet {
			sc.Interval = loadgen.FaultInterval
		}
		if _, params, ok := strings.Cut(specString(fspec), ":"); ok && len(specs) > 1 && sc.Variant == "" {
			sc.Variant = params // told apart from the other --fault specs
		}
		if err := sc.Validate(); err != nil {
			return nil, err
		}
		for _, info := range infos {
			cells = append(cells, cell{info: info, spec: fspec, sc: sc})
		}
	}
	return cells, nil
}

// runRun is `lockbench run`: one scenario per strategy, fresh state each,
// --trials times; --from DIR --row N runs a row of a run directory again.
func runRun(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	o, err := parseRun(args, stdout, stderr)
	if err != nil {
		return err
	}
	if o.dryRun {
		return printCases(stdout, "run", o.cells, o.trials, 1)
	}
	sc := o.cells[0].sc
	payments, _ := sc.PaymentBound()
	dir, err := newRunDir(o.out, "run", args, outEstimate(len(o.cells)*o.trials, payments, o.history))
	if err != nil {
		return err
	}
	defer sayInterruptedAtExit(ctx, stderr, dir) // after the report is written
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
	for _, c := range cells {
		if why := sess.faultRefused(c); why != "" {
			return usageErr("--fault: %s: %s", c.label(), why)
		}
	}
	if err := sess.serveMetrics(o.mf); err != nil {
		return err
	}
	dir.describe(ctx, sess, o.trials, sc.Seed, o.history)
	if o.cpuProfile != "" {
		stop, err := startCPUProfile(o.cpuProfile)
		if err != nil {
			return err
		}
		defer stop()
	}
	// Trials interleave (runCases): every strategy's first trial, then
	// every strategy's second, so that a machine that slows down over the
	// command slows every strategy alike.
	skipped, failed, err := runCases(ctx, []*session{sess}, dir, cells, o.trials, stderr)
	if err != nil {
		return err
	}
	if len(skipped) > 0 {
		return fmt.Errorf("run: cells not run: %s", strings.Join(skipped, "; ")) // faultRefused let none through: a bug
	}
	if err := dir.close(); err != nil {
		return err
	}
	sums := dir.summaries()
	if o.asJSON {
		if err := results.WriteJSON(stdout, sums); err != nil {
			return err
		}
	} else {
		report.Table(stdout, sums)
		fmt.Fprintf(stdout, "\nrun directory: %s\n", dir.dir)
	}
	if len(failed) > 0 {
		return fmt.Errorf("run: %d of %d runs failed: %s", len(failed), len(cells)*o.trials, strings.Join(failed, "; "))
	}
	if o.failOnUnsafe {
		for _, s := range sums {
			if s.Unsafe {
				return fmt.Errorf("%w: %s", ErrUnsafe, s.String())
			}
		}
	}
	return brokenStrategy(sums)
}

// brokenStrategy is an error naming the strategy when no row of sums could
// be judged because the lock gave (almost) no answers: it broke, and
// nothing here says anything about it. A run with some row judged, or cut
// short, is not.
func brokenStrategy(sums []results.Summary) error {
	if len(sums) == 0 {
		return nil
	}
	var names []string
	for i := range sums {
		s := &sums[i]
		brokeAtStart := strings.HasPrefix(s.Unjudged, results.BrokeAtStart)
		if !s.Unknown() || (s.Payments == 0 && !brokeAtStart) || s.Interrupted {
			return nil
		}
		if !slices.Contains(names, s.Strategy) {
			names = append(names, s.Strategy)
		}
	}
	why := strings.TrimPrefix(sums[0].Unjudged, results.BrokeAtStart+": ")
	if why != sums[0].Unjudged {
		why = "before its first payment: " + why
	}
	return fmt.Errorf("%s: no verdict in any run, the strategy broke: %s", strings.Join(names, ", "), why)
}

// rowOf is row n (1-based) of the summary.json of the run directory dir.
func rowOf(dir string, n int) (results.Summary, error) {
	ss, _, err := report.ReadSummaries(dir)
	if err != nil {
		return results.Summary{}, usageErr("--from: %s is not a run directory: %s", dir, oneLine(err.Error()))
	}
	if n < 1 || n > len(ss) {
		return results.Summary{}, usageErr("--row: want 1..%d (the rows of %s/%s), got %d", len(ss), dir, results.SummaryJSONFile, n)
	}
	return ss[n-1], nil
}
