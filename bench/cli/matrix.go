package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/lockbench/lockbench/faults"
	"github.com/lockbench/lockbench/loadgen"
	"github.com/lockbench/lockbench/strategies"

	"github.com/lockbench/lockbench/plan"
	"github.com/lockbench/lockbench/results"
	"github.com/lockbench/lockbench/servers"
)

// ScenarioBasePostgres is the base scenario on the Postgres store, where a
// transactional strategy (pg-unique) runs beside the locks.
const ScenarioBasePostgres = "base-postgres"

// matrixPlan is the size of the published matrix.
type matrixPlan struct {
	basePayments int
	// accounts are the contention levels: fewer accounts, more workers per
	// lock key (3 instances × 8 workers = 24 workers).
	accounts       []int
	contentionPays int
	// pgContentionAll runs every strategy in the contention sweep on the
	// Postgres store (results.ScenarioPgContention); false runs only the
	// strategies that keep their state in Postgres (the transactional
	// ones and the Postgres locks), to keep the quick matrix quick.
	pgContentionAll bool
	// rates are the open-loop sweep's offered payments/s; a strategy's sweep
	// stops after the first rate it cannot sustain (see matrixSLOP99).
	rates        []float64
	stepDuration time.Duration
	stepWarmup   time.Duration
}

// The quick matrix's representative subset, unless --strategy or --fault
// name others: the controls, the single-node Redis locks with and without
// a token, Redlock, etcd, a Postgres lock, the lock-free transaction and
// the queue (the seed's two answers that take no lock), under the faults
// that break them by design. It keeps `make bench` under
// five minutes on two cores; the full matrix runs every strategy and
// fault.
var (
	quickStrategies = []string{"nolock", "mutex", "setnx", "fencing", "redlock", "etcd", "pg-onconflict", "pg-unique", "pg-for-update", "pg-optimistic", "queue"}
	quickFaults     = []string{"none", "pause", "kill-node", "restart-node", "clock-jump"}
)

var (
	quickMatrix = matrixPlan{
		basePayments: 800, accounts: []int{24, 6, 1}, contentionPays: 300,
		rates: []float64{250, 1000, 2000, 4000}, stepDuration: time.Second, stepWarmup: 250 * time.Millisecond,
	}
	fullMatrix = matrixPlan{
		// 6,000 payments of two deliveries: 12,000 samples a phase, so
		// that at least 10 stand beyond the p99.9 the report prints.
		basePayments: 6000, accounts: []int{96, 24, 6, 2, 1}, contentionPays: 2000, pgContentionAll: true,
		rates: []float64{250, 500, 1000, 2000, 4000, 8000}, stepDuration: 5 * time.Second, stepWarmup: time.Second,
	}
)

// matrixSLOP99 is the matrix's own SLO, the p99 total latency within which
// a rate-sweep step holds: 250ms. It is looser than lockbench plan's
// default (plan.DefaultSLOP99, 20ms) so that the latency–throughput chart
// shows the slower locks' curves (etcd's p99 is above 20ms at any rate)
// up to where they fall over; the rule is the plan's, plan.Sustainable: a
// strategy's sweep stops after the first rate with p99 over this, an error,
// a payment given up, or achieved under 95% of offered.
const matrixSLOP99 = 250 * time.Millisecond

// matrixOptions are the parsed and checked input of `lockbench matrix`.
type matrixOptions struct {
	cellOptions
	infos []strategies.Info
	size  matrixPlan
	notes []string
	// sweepTrials are the contention and rate sweeps' trials
	// (--sweep-trials; default trials).
	sweepTrials int
}

// parseMatrix parses and checks the input of `lockbench matrix` and builds
// its cells, starting nothing.
func parseMatrix(args []string, stdout, stderr io.Writer) (o matrixOptions, err error) {
	fs := newFlagSet("matrix", stderr)
	var cf cellFlags
	cf.register(fs, "matrix", cellHelp{
		strategy: "comma-separated strategies, or all",
		fault:    "comma-separated faults for the verdict part, none to skip it; or one NAME:key=value,…",
		dryRun:   "print the runs the matrix would make, with an estimated time, and run nothing",
	})
	quick := fs.Bool("quick", false, "the quick matrix (under 5 minutes on 2 cores)")
	sweepTrials := fs.Int("sweep-trials", 0, fmt.Sprintf("trials of the contention and rate sweeps' cells, 1..%d (default: --trials); the base scenario and the verdict cells take --trials", maxTrials))
	if err := cf.parse(fs, args, stdout); err != nil {
		return o, err
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	var notes []string
	if !given["sweep-trials"] {
		*sweepTrials = *cf.trials
	}
	if *sweepTrials < 1 || *sweepTrials > maxTrials {
		return o, usageErr("--sweep-trials: want a number of trials 1..%d", maxTrials)
	}
	if *sweepTrials < *cf.trials {
		notes = append(notes, fmt.Sprintf("The contention and rate sweeps ran %d trial(s) a cell, the base scenario and the verdict cells %d.", *sweepTrials, *cf.trials))
	}
	if *quick && !given["strategy"] {
		*cf.strategy = strings.Join(quickStrategies, ",")
		notes = append(notes, "Quick matrix: a representative subset of the strategies ("+*cf.strategy+"); `lockbench matrix` runs them all.")
	}
	if *quick && !given["fault"] {
		cf.fault.def = strings.Join(quickFaults, ",")
		notes = append(notes, "Quick matrix: the faults "+cf.fault.def+"; `lockbench matrix` runs every fault.")
	}
	if *cf.trials == 1 {
		notes = append(notes, "One trial per cell: the figures have no error bars; `--trials 6` gives 95% confidence intervals.")
	}
	infos, err := parseStrategies(*cf.strategy)
	if err != nil {
		return o, err
	}
	var faultNames []string
	if cf.fault.String() != "none" {
		if faultNames, err = parseFaults(cf.fault.list()); err != nil {
			return o, err
		}
	}
	cases, err := verdictCases(infos, faultNames)
	if err != nil {
		return o, err
	}
	if !*quick {
		// The strict fencing rule beside the on/off one (the quick matrix
		// keeps to its time budget without it).
		cases = variantCases(cases, 0, false)
	}
	_, pgSync, err := cf.ef.pgLayout()
	if err != nil {
		return o, err
	}
	for i := range cases {
		// WAIT and a synchronous standby, when asked for, in every Redis
		// and Postgres cell rather than beside.
		cases[i].wait = cf.ef.wait
		cases[i].pgSync = pgSync && cases[i].info.Need.Backend == strategies.BackendPostgres
	}
	size := fullMatrix
	if *quick {
		size = quickMatrix
	}
	co, err := cf.options(cases)
	if err != nil {
		return o, err
	}
	return matrixOptions{cellOptions: co, infos: infos, size: size, notes: notes, sweepTrials: *sweepTrials}, nil
}

// runMatrix is `lockbench matrix`: every strategy through the base scenario,
// a contention sweep, an open-loop rate sweep and the verdict faults, into
// one run directory with every chart.
func runMatrix(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	o, err := parseMatrix(args, stdout, stderr)
	if err != nil {
		return err
	}
	infos, cases, size, notes := o.infos, o.cases, o.size, o.notes
	if o.dryRun {
		return printMatrix(stdout, size, infos, cases, o.trials, o.sweepTrials, o.lanes, o.seed, o.ef)
	}
	dir, err := openCellDir(o.cellOptions, "matrix", args, outEstimate(size.runs(infos, len(cases), o.trials, o.sweepTrials), size.basePayments, o.history))
	if err != nil {
		return err
	}
	defer sayInterruptedAtExit(ctx, stderr, dir) // after the report is written
	defer dir.closeAtExit(&err)
	dir.meta.Notes = append(dir.meta.Notes, notes...)
	locks, onPostgres := splitLocks(infos)
	base := size.baseCells(locks, onPostgres)
	need, opts := cellServers(append(base[:len(base):len(base)], cases...))
	began := time.Now()
	sess, err := o.openSession(ctx, dir, need, opts, stderr)
	if err != nil {
		return err
	}
	defer sess.Close()
	m := &matrixRun{ctx: ctx, o: &o, dir: dir, sess: sess, stderr: stderr}
	if err := m.faultFree(base, locks, onPostgres); err != nil || ctx.Err() != nil {
		return firstErr(err, ctx.Err())
	}
	// 4. The faults: the verdict table.
	lanes, closeLanes, err := openLanes(ctx, sess, o.ef, need, opts, o.lanes, stderr)
	if err != nil {
		return err
	}
	defer closeLanes()
	_, failed, err := runCases(ctx, lanes, dir, cases, o.trials, stderr)
	if err != nil {
		return err
	}
	if err := dir.finishResume(stderr); err != nil {
		return err
	}
	if err := dir.close(); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "matrix: %d runs in %s; report: %s/report.md (and report.html)\n", len(dir.runs), time.Since(began).Round(time.Second), dir.dir)
	if len(failed) > 0 {
		return fmt.Errorf("matrix: %d fault runs failed: %v", len(failed), failed)
	}
	return nil
}

// matrixRun is a matrix under way: its fault-free parts (faultFree) run
// cell by cell on its session into its directory.
type matrixRun struct {
	ctx    context.Context
	o      *matrixOptions
	dir    *runDir
	sess   *session
	stderr io.Writer
}

// faultFree runs the matrix's fault-free parts: the base scenario,
// contention, then the rate sweep (see "The matrix" in the package doc).
// locks run on the memory store, onPostgres on the Postgres store.
func (m *matrixRun) faultFree(base []cell, locks, onPostgres []strategies.Info) error {
	size, trials, sweepTrials := m.o.size, m.o.trials, m.o.sweepTrials
	for _, c := range base {
		if _, err := m.step(c, "", trials); err != nil || m.ctx.Err() != nil {
			return err
		}
	}
	sweep := func(what string, infos []strategies.Info, sc func(int) loadgen.Scenario) error {
		for _, info := range infos {
			for _, accounts := range size.accounts {
				c := cell{what: what, info: info, sc: sc(accounts)}
				if _, err := m.step(c, fmt.Sprintf("accounts=%d", accounts), sweepTrials); err != nil || m.ctx.Err() != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := sweep("contention", locks, size.contentionScenario); err != nil || m.ctx.Err() != nil {
		return err
	}
	if err := sweep("pg-contention", size.pgContentionNames(onPostgres), size.pgContentionScenario); err != nil || m.ctx.Err() != nil {
		return err
	}
	for _, info := range locks {
		for _, rate := range size.rates {
			runs, err := m.step(cell{what: fmt.Sprintf("rate %g", rate), info: info, sc: size.sweepScenario(rate)}, "", sweepTrials)
			if err != nil || m.ctx.Err() != nil {
				return err
			}
			held := 0
			for i := range runs {
				if plan.Sustainable(&runs[i].Summary, rate, matrixSLOP99) {
					held++
				}
			}
			if 2*held <= len(runs) {
				break
			}
		}
	}
	return nil
}

// step runs every trial of one fault-free cell, one after another (a
// sweep decides on a rate's trials before the next rate), each said on
// stderr: the part of the matrix, the strategy and, where the rows of a
// part differ in a parameter (varies, "accounts=24"), which.
func (m *matrixRun) step(c cell, varies string, trials int) ([]results.Run, error) {
	ctx, dir, name, sc := m.ctx, m.dir, c.info.Name, c.sc
	sc.Seed = m.o.seed
	var runs []results.Run
	for trial := 1; trial <= trials; trial++ {
		if s, ok := dir.match.done(name, trial, paramsOf(trialScenario(m.sess, sc, trial), faults.Spec{}), sc.Variant, 0); ok {
			runs = append(runs, results.Run{Summary: s, OnDisk: true}) // held by the directory resumed
			continue
		}
		t0 := time.Now()
		r, err := runTrial(ctx, m.sess, c.info, sc, faults.Spec{}, trial)
		if err != nil {
			return runs, err
		}
		label := c.what
		if trials > 1 {
			label += fmt.Sprintf(" #%d", trial)
		}
		p99 := results.Dash
		if v, ok := r.Summary.Latency["total"].Value(results.StatP99); ok {
			p99 = results.FormatDuration(v)
		}
		extra := ""
		if r.Summary.Conflicts > 0 {
			extra = fmt.Sprintf("  conflicts %d", r.Summary.Conflicts)
		}
		fmt.Fprintf(m.stderr, "%-13s %-27s %8.0f pay/s  total p99 %-9s %s%s  (%s)\n", label, strings.TrimSpace(name+" "+varies), r.Summary.PaymentsPerSec,
			p99, r.Summary.Label(), extra, time.Since(t0).Round(100*time.Millisecond))
		err = dir.add(r)
		runs = append(runs, dir.runs[len(dir.runs)-1]) // its summary alone, once on disk
		if err != nil || ctx.Err() != nil {
			return runs, firstErr(err, ctx.Err())
		}
	}
	return runs, nil
}

// baseCells are the base scenario's cells: every lock on the memory
// store, then, when a transactional strategy runs, every strategy on the
// Postgres store.
func (m matrixPlan) baseCells(locks, onPostgres []strategies.Info) []cell {
	var out []cell
	for _, info := range locks {
		sc := loadgen.DefaultScenario()
		sc.Name = results.ScenarioBase
		sc.Payments = m.basePayments
		out = append(out, cell{what: "base", info: info, sc: sc})
	}
	for _, info := range onPostgres {
		sc := loadgen.DefaultScenario()
		sc.Name = ScenarioBasePostgres
		sc.Store = loadgen.StorePostgres
		sc.Payments = m.basePayments
		out = append(out, cell{what: "base-pg", info: info, sc: sc})
	}
	return out
}

// contentionScenario is the contention sweep's point at accounts.
func (m matrixPlan) contentionScenario(accounts int) loadgen.Scenario {
	sc := loadgen.DefaultScenario()
	sc.Name = results.ScenarioContention
	sc.Accounts = accounts
	sc.Payments = m.contentionPays
	return sc
}

// runs is how many runs the matrix of names and cases fault cells makes at
// most (every rate of the sweep).
func (m matrixPlan) runs(infos []strategies.Info, cases, trials, sweepTrials int) int {
	locks, onPostgres := splitLocks(infos)
	sweeps := (len(locks)+len(m.pgContentionNames(onPostgres)))*len(m.accounts) + len(locks)*len(m.rates)
	return (len(m.baseCells(locks, onPostgres))+cases)*trials + sweeps*sweepTrials
}

// pgContentionScenario is the Postgres store's contention sweep's point at
// accounts.
func (m matrixPlan) pgContentionScenario(accounts int) loadgen.Scenario {
	sc := m.contentionScenario(accounts)
	sc.Name = results.ScenarioPgContention
	sc.Store = loadgen.StorePostgres
	return sc
}

// pgContentionNames are the strategies of onPostgres that run the
// contention sweep on the Postgres store: all of them, or
// (pgContentionAll unset) those that keep their state in Postgres.
func (m matrixPlan) pgContentionNames(onPostgres []strategies.Info) []strategies.Info {
	if m.pgContentionAll {
		return onPostgres
	}
	var out []strategies.Info
	for _, info := range onPostgres {
		if info.Transactional || info.Need.Backend == strategies.BackendPostgres {
			out = append(out, info)
		}
	}
	return out
}

// sweepScenario is the rate sweep's step at rate, long enough for the p99
// the latency–throughput chart plots (stepFor).
func (m matrixPlan) sweepScenario(rate float64) loadgen.Scenario {
	sc := loadgen.DefaultScenario()
	sc.Name = results.ScenarioSweep
	sc.Payments = 0
	sc.Duration, sc.Warmup = m.stepDuration, m.stepWarmup
	return stepFor(sc, rate)
}

// splitLocks are the strategies of the memory-store scenarios (the locks)
// and, when a transactional strategy is among names, every strategy for
// the Postgres-store one.
func splitLocks(infos []strategies.Info) (locks, onPostgres []strategies.Info) {
	for _, info := range infos {
		if info.Transactional {
			onPostgres = infos
		} else {
			locks = append(locks, info)
		}
	}
	return locks, onPostgres
}

// printMatrix is the matrix's --dry-run: what it would run, section by
// section, with estimated times (the sweep's at most: it stops at the
// first rate a strategy cannot sustain).
func printMatrix(w io.Writer, m matrixPlan, infos []strategies.Info, cases []cell, trials, sweepTrials, lanes int, seed int64, ef endpointFlags) error {
	locks, onPostgres := splitLocks(infos)
	var b strings.Builder
	var total time.Duration
	section := func(what string, runs int, d time.Duration, trials int) {
		d *= time.Duration(trials)
		total += d
		fmt.Fprintf(&b, "%-46s %4d cells × %d trials  %9s\n", what, runs, trials, fmtEstimate(d))
	}
	// A failover needs a replicated Redis, or a Postgres with a standby:
	// without, its cells are listed as not run, as the run itself would
	// skip them.
	var skipped []string
	topo, _ := ef.topology()
	pgTopo, _, _ := ef.pgLayout()
	var keep []cell
	for _, c := range cases {
		switch pg := c.info.Need.Backend == strategies.BackendPostgres; {
		case c.spec.Name != "failover":
		case pg && pgTopo != servers.PgReplica:
			skipped = append(skipped, c.label()+" (needs --pg-topology replica)")
			continue
		case !pg && topo != servers.TopologySentinel:
			skipped = append(skipped, c.label()+" (needs --redis-topology sentinel)")
			continue
		}
		keep = append(keep, c)
	}
	cases = keep
	var d time.Duration
	base := m.baseCells(locks, onPostgres)
	for _, c := range base {
		d += estimate(c.sc)
	}
	section("base (closed loop)", len(base), d, trials)
	d = 0
	for range locks {
		for _, a := range m.accounts {
			d += estimate(m.contentionScenario(a))
		}
	}
	section(fmt.Sprintf("contention (accounts %v)", m.accounts), len(locks)*len(m.accounts), d, sweepTrials)
	d = 0
	pgNames := m.pgContentionNames(onPostgres)
	for range pgNames {
		for _, a := range m.accounts {
			d += estimate(m.pgContentionScenario(a))
		}
	}
	if len(pgNames) > 0 {
		section("contention on the Postgres store", len(pgNames)*len(m.accounts), d, sweepTrials)
	}
	d = 0
	for range locks {
		for _, r := range m.rates {
			d += estimate(m.sweepScenario(r))
		}
	}
	section(fmt.Sprintf("rate sweep (%v/s, at most)", m.rates), len(locks)*len(m.rates), d, sweepTrials)
	d = 0
	for _, c := range cases {
		d += estimate(c.sc)
	}
	what := "faults (the verdict table)"
	if lanes > 1 {
		// The lanes share the runs out; each more lane starts its servers.
		what = fmt.Sprintf("faults (the verdict table, %d lanes)", lanes)
		d /= time.Duration(lanes)
		total += time.Duration(lanes-1) * estimateServers
	}
	section(what, len(cases), d, trials)
	fmt.Fprintf(&b, "\nstrategies: %s\nseed %d; %s in all with server start-up (estimated; nothing was run)\n",
		namesOf(infos), seed, fmtEstimate(total+estimateServers))
	for _, l := range skipped {
		fmt.Fprintf(&b, "not applicable, not run: %s\n", l)
	}
	fmt.Fprintln(&b, "\nfault cells:")
	_, err := io.WriteString(w, b.String())
	if err != nil {
		return err
	}
	return printCases(w, "faults", cases, trials, lanes)
}
