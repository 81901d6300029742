package cli

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/lockbench/lockbench/loadgen"
	"github.com/lockbench/lockbench/results"
	"github.com/lockbench/lockbench/servers"
)

// matrixPlan is the size of the published matrix.
type matrixPlan struct {
	basePayments int
	// accounts are the contention levels: fewer accounts, more workers per
	// lock key (3 instances × 8 workers = 24 workers).
	accounts       []int
	contentionPays int
	// rates are the open-loop sweep's offered payments/s; a strategy's sweep
	// stops after the first rate it cannot keep up with.
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

// saturated is how far behind its offered rate a sweep step may fall before
// the sweep stops: achieved < 90% of offered.
const saturated = 0.9

// runMatrix is `lockbench matrix`: every strategy through the base scenario,
// a contention sweep, an open-loop rate sweep and the verdict faults, into
// one run directory with every chart.
func runMatrix(ctx context.Context, args []string, stdout, stderr io.Writer) error {
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
	plan := fullMatrix
	if *quick {
		plan = quickMatrix
	}
	dir, err := newRunDir(*out, "matrix", args)
	if err != nil {
		return err
	}
	need := needs(names, loadgen.DefaultScenario())
	var opts servers.Options
	for _, c := range cases {
		opts.Faketime = opts.Faketime || c.spec.ServerOptions().Faketime
		n := needs([]string{c.strategy}, c.sc)
		need.Redis, need.Etcd, need.Postgres = max(need.Redis, n.Redis), need.Etcd || n.Etcd, need.Postgres || n.Postgres
	}
	began := time.Now()
	sess, err := openSession(ctx, ef, need, opts, stderr)
	if err != nil {
		return err
	}
	defer sess.Close()
	step := func(what string, name string, sc loadgen.Scenario) (results.Run, error) {
		t0 := time.Now()
		r, err := sess.run(ctx, name, sc, nil)
		if err != nil {
			return r, err
		}
		fmt.Fprintf(stderr, "%-10s %-14s %8.0f pay/s  total p99 %-9s %s  (%s)\n", what, name, r.Summary.PaymentsPerSec,
			time.Duration(r.Summary.Latency["total"].P99).Round(time.Microsecond), r.Summary.Verdict(), time.Since(t0).Round(100*time.Millisecond))
		return r, dir.add(r)
	}

	// 1. The base scenario: the latency spectrum and the results table.
	for _, name := range names {
		sc := loadgen.DefaultScenario()
		sc.Name = results.ScenarioBase
		sc.Payments = plan.basePayments
		if _, err := step("base", name, sc); err != nil || ctx.Err() != nil {
			return firstErr(err, ctx.Err())
		}
	}
	// 2. Contention: the same load on fewer and fewer accounts.
	for _, name := range names {
		for _, accounts := range plan.accounts {
			sc := loadgen.DefaultScenario()
			sc.Name = results.ScenarioContention
			sc.Accounts = accounts
			sc.Payments = plan.contentionPays
			if _, err := step("contention", name, sc); err != nil || ctx.Err() != nil {
				return firstErr(err, ctx.Err())
			}
		}
	}
	// 3. The open-loop rate sweep, up to the first rate a strategy cannot
	// sustain: the latency–throughput curve and its knee.
	for _, name := range names {
		for _, rate := range plan.rates {
			sc := loadgen.DefaultScenario()
			sc.Name = results.ScenarioSweep
			sc.Rate = rate
			sc.Payments = 0
			sc.Duration, sc.Warmup = plan.stepDuration, plan.stepWarmup
			r, err := step(fmt.Sprintf("rate %g", rate), name, sc)
			if err != nil || ctx.Err() != nil {
				return firstErr(err, ctx.Err())
			}
			if r.Summary.PaymentsPerSec < saturated*rate {
				break
			}
		}
	}
	// 4. The faults: the verdict table.
	_, failed, err := runCases(ctx, sess, dir, cases, stderr)
	if err != nil {
		return err
	}
	if err := results.Render(dir.dir); err != nil {
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
