// Running the verdict experiments: `lockbench verdicts` opens the session
// and its lanes, runs every cell's trials into one run directory and writes
// the verdict table; with the session's checks of which cells its servers
// can run. The cells are experiments.go; the tables, verdicts_table.go.

package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/lockbench/lockbench/internal/atomicfile"
	"github.com/lockbench/lockbench/report"
	"github.com/lockbench/lockbench/results"
	"github.com/lockbench/lockbench/servers"
	"github.com/lockbench/lockbench/strategies"
)

// VerdictsMarkdownFile is the verdict table in Markdown, written next to
// verdicts.json.
const VerdictsMarkdownFile = "verdicts.md"

// notApplicable says why a cell cannot run on the session's servers: a
// strategy that needs independent Redis masters on a replicated Redis, or
// a fault the servers' layout rules out (faults.Spec.Fits: a failover needs
// replicas, a partition cannot reroute a Sentinel client); "" when it can.
func (s *session) notApplicable(c cell) string {
	t, err := servers.TargetFor(c.info.Need, s.ep, s.cluster)
	switch {
	case errors.Is(err, servers.ErrNeedsMasters):
		return "needs independent Redis masters; the sentinel topology has one primary and its replicas"
	case err != nil:
		return ""
	}
	if err := c.spec.Fits(t); err != nil {
		return err.Error()
	}
	return ""
}

// notApplicablePrefix marks the cells runCases did not run because they do
// not apply to the servers' layout.
const notApplicablePrefix = "not applicable: "

// hasLocal reports whether the session started the servers the strategy
// uses itself (node faults need that).
func (s *session) hasLocal(info strategies.Info) bool {
	t, err := s.target(info)
	return err == nil && t.Local()
}

// runVerdicts is `lockbench verdicts`: every strategy under every fault that
// applies to it, in one small scenario, and the verdict table.
func runVerdicts(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	o, err := parseVerdicts(args, stdout, stderr)
	if err != nil {
		return err
	}
	cases := o.cases
	if o.dryRun {
		return printCases(stdout, "verdicts", cases, o.trials, o.lanes)
	}
	need, opts := cellServers(cases)
	payments := 0
	for _, c := range cases {
		if p, ok := c.sc.PaymentBound(); ok {
			payments = max(payments, p)
		}
	}
	dir, err := openCellDir(o.cellOptions, "verdicts", args, outEstimate(len(cases)*o.trials, payments, o.history))
	if err != nil {
		return err
	}
	defer sayInterruptedAtExit(ctx, stderr, dir) // after the report is written
	defer dir.closeAtExit(&err)
	began := time.Now()
	sess, err := o.openSession(ctx, dir, need, opts, stderr)
	if err != nil {
		return err
	}
	defer sess.Close()

	tokenless := tokenlessOf(cases)
	lanes, closeLanes, err := openLanes(ctx, sess, o.ef, need, opts, o.lanes, stderr)
	if err != nil {
		return err
	}
	defer closeLanes()
	skipped, failed, err := runCases(ctx, lanes, dir, cases, o.trials, stderr)
	if err != nil {
		return err
	}
	if err := dir.finishResume(stderr); err != nil {
		return err
	}
	sums := dir.summaries()
	var table bytes.Buffer
	if err := report.VerdictTable(&table, sums); err != nil {
		return err
	}
	if err := atomicfile.WriteFile(filepath.Join(dir.dir, VerdictsMarkdownFile), table.Bytes()); err != nil {
		return err
	}
	if err := dir.close(); err != nil {
		return err
	}
	wall := time.Since(began).Round(time.Second)
	if o.asJSON {
		if err := results.WriteJSON(stdout, sums); err != nil {
			return err
		}
	} else if err := printVerdicts(ctx, stdout, dir, sums, table.Bytes(), skipped, tokenless, wall); err != nil {
		return err
	}
	for _, s := range skipped {
		fmt.Fprintln(stderr, "skipped:", s)
	}
	if len(failed) > 0 {
		return fmt.Errorf("verdicts: %d of %d runs failed:\n  %s", len(failed), len(cases)*o.trials, strings.Join(failed, "\n  "))
	}
	if o.failOnUnsafe {
		for _, s := range sums {
			if s.Unsafe {
				return fmt.Errorf("%w: %s", ErrUnsafe, s.String())
			}
		}
	}
	return nil
}

// tokenlessOf names the strategies of cases that issue no fencing token.
func tokenlessOf(cases []cell) []string {
	var out []string
	for _, c := range cases {
		if !c.info.Fencing && !contains(out, c.info.Name) {
			out = append(out, c.info.Name)
		}
	}
	return out
}

// printVerdicts writes the verdict table and what goes with it to
// stdout: the fault windows' rates, the waits, the cells not run, the
// tokenless strategies run once, and where the run directory is.
func printVerdicts(ctx context.Context, stdout io.Writer, dir *runDir, sums []results.Summary, table []byte, skipped, tokenless []string, wall time.Duration) error {
	stdout.Write(table)
	fmt.Fprintln(stdout)
	rates, err := dir.windowRates(ctx)
	if err != nil {
		return err
	}
	if err := windowTable(stdout, sums, rates); err != nil {
		return err
	}
	if err := waitTable(stdout, sums); err != nil {
		return err
	}
	printNotApplicable(stdout, skipped)
	if len(tokenless) > 0 {
		fmt.Fprintf(stdout, "\n%s issue no fencing token, so the store's check cannot help them: they run once, with it off.\n", strings.Join(tokenless, ", "))
	}
	fmt.Fprintf(stdout, "%d runs in %s; run directory: %s\n", len(sums), wall, dir.dir)
	return nil
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
