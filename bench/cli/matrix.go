package cli

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/lockbench/lockbench/bench/faults"
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
	// rates are the open-loop sweep's offered payments/s; a strategy's sweep
	// stops after the first rate it cannot sustain (see matrixSLOP99).
	rates        []float64
	stepDuration time.Duration
	stepWarmup   time.Duration
}

var (
	quickMatrix = matrixPlan{
		basePayments: 800, accounts: []int{24, 6, 1}, contentionPays: 300,
		rates: []float64{250, 1000, 2000, 4000}, stepDuration: time.Second, stepWarmup: 250 * time.Millisecond,
	}
	fullMatrix = matrixPlan{
		basePayments: 5000, accounts: []int{96, 24, 6, 2, 1}, contentionPays: 2000,
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

// runMatrix is `lockbench matrix`: every strategy through the base scenario,
// a contention sweep, an open-loop rate sweep and the verdict faults, into
// one run directory with every chart.
func runMatrix(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	fs := newFlagSet("matrix", stderr)
	var ef endpointFlags
	ef.register(fs)
	quick := fs.Bool("quick", false, "the quick matrix (under 5 minutes on 2 cores)")
	strategyList := fs.String("strategy", "all", "comma-separated strategies, or all")
	faultList := fs.String("fault", "all", "comma-separated faults for the verdict part, none to skip it")
	out := fs.String("out", "", "run directory (default out/matrix-DATE-TIME)")
	if err := parseFlags(fs, args, stdout); err != nil {
		return err
	}
	names, err := parseStrategies(*strategyList)
	if err != nil {
		return err
	}
	var faultNames []string
	if *faultList != "none" {
		if faultNames, err = parseFaults(*faultList); err != nil {
			return err
		}
	}
	cases, err := verdictCases(names, faultNames)
	if err != nil {
		return err
	}
	size := fullMatrix
	if *quick {
		size = quickMatrix
	}
	dir, err := newRunDir(*out, "matrix", args)
	if err != nil {
		return err
	}
	defer dir.closeAtExit(&err)
	need := needs(names, loadgen.DefaultScenario())
	var opts servers.Options
	for _, c := range cases {
		opts.Faketime = opts.Faketime || c.spec.ServerOptions().Faketime
		need.Merge(needs([]string{c.strategy}, c.sc))
	}
	began := time.Now()
	sess, err := openSession(ctx, ef, need, opts, stderr)
	if err != nil {
		return err
	}
	defer sess.Close()
	step := func(what string, name string, sc loadgen.Scenario) (results.Run, error) {
		t0 := time.Now()
		r, err := sess.run(ctx, name, sc, faults.Spec{})
		if err != nil {
			return r, err
		}
		fmt.Fprintf(stderr, "%-10s %-14s %8.0f pay/s  total p99 %-9s %s  (%s)\n", what, name, r.Summary.PaymentsPerSec,
			time.Duration(r.Summary.Latency["total"].P99).Round(time.Microsecond), r.Summary.Verdict(), time.Since(t0).Round(100*time.Millisecond))
		return r, dir.add(r)
	}

	// Transactional strategies (pg-unique) run on the Postgres store only:
	// they leave the memory-store scenarios to the locks and get one of
	// their own, below, where every strategy runs on the Postgres store.
	var locks, onPostgres []string
	for _, name := range names {
		if info, _ := strategies.Lookup(name); info.Transactional {
			onPostgres = names
		} else {
			locks = append(locks, name)
		}
	}
	// 1. The base scenario: the latency spectrum and the results table.
	for _, name := range locks {
		sc := loadgen.DefaultScenario()
		sc.Name = results.ScenarioBase
		sc.Payments = size.basePayments
		if _, err := step("base", name, sc); err != nil || ctx.Err() != nil {
			return firstErr(err, ctx.Err())
		}
	}
	// 1b. The base scenario on the Postgres store, every strategy: what no
	// lock costs against the locks, like for like.
	for _, name := range onPostgres {
		sc := loadgen.DefaultScenario()
		sc.Name = ScenarioBasePostgres
		sc.Store = "postgres"
		sc.Payments = size.basePayments
		if _, err := step("base-pg", name, sc); err != nil || ctx.Err() != nil {
			return firstErr(err, ctx.Err())
		}
	}
	// 2. Contention: the same load on fewer and fewer accounts.
	for _, name := range locks {
		for _, accounts := range size.accounts {
			sc := loadgen.DefaultScenario()
			sc.Name = results.ScenarioContention
			sc.Accounts = accounts
			sc.Payments = size.contentionPays
			if _, err := step("contention", name, sc); err != nil || ctx.Err() != nil {
				return firstErr(err, ctx.Err())
			}
		}
	}
	// 3. The open-loop rate sweep, up to the first rate a strategy cannot
	// sustain: the latency–throughput curve and its knee.
	for _, name := range locks {
		for _, rate := range size.rates {
			sc := loadgen.DefaultScenario()
			sc.Name = results.ScenarioSweep
			sc.Rate = rate
			sc.Payments = 0
			sc.Duration, sc.Warmup = size.stepDuration, size.stepWarmup
			r, err := step(fmt.Sprintf("rate %g", rate), name, sc)
			if err != nil || ctx.Err() != nil {
				return firstErr(err, ctx.Err())
			}
			if !plan.Sustainable(&r.Summary, rate, matrixSLOP99) {
				break
			}
		}
	}
	// 4. The faults: the verdict table.
	_, failed, err := runCases(ctx, sess, dir, cases, stderr)
	if err != nil {
		return err
	}
	if err := dir.close(); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "matrix: %d runs in %s; report: %s/report.md\n", len(dir.runs), time.Since(began).Round(time.Second), dir.dir)
	if ctx.Err() != nil {
		fmt.Fprintf(stderr, "interrupted: partial results in %s\n", dir.dir)
	}
	if len(failed) > 0 {
		return fmt.Errorf("matrix: %d fault runs failed: %v", len(failed), failed)
	}
	return nil
}
