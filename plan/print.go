package plan

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/lockbench/lockbench/results"
)

// Print writes the plan table for people: how the sweep ran, one line per
// strategy, then which fit the target. cfg is the sweep's configuration
// (its start, factor and confirmation are not in the Report).
func Print(w io.Writer, rep Report, cfg Config) {
	printSweep(w, rep, cfg)
	fit, nofit, noExcl := printLines(w, rep)
	if target := rep.TargetRate; target > 0 {
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

// printSweep writes the plan's heading: the scenario, how the sweep ran
// and judged its rates, and where the risks came from.
func printSweep(w io.Writer, rep Report, cfg Config) {
	p := rep.Params
	fmt.Fprintf(w, "plan: %d instances × %d workers, %d deliveries, %d accounts (%s), lock on %s, hold %s, store %s\n",
		p.Instances, p.Workers, p.DeliveriesEach, p.Accounts, p.AccountDist, p.LockKey, p.Hold, p.Store)
	fmt.Fprintf(w, "sweep: open loop from %.0f/s ×%g, %s steps (+%s warmup); a rate holds with p99 total ≤ %s, no errors, ≤ %.0f%% behind",
		cfg.Start, cfg.Factor, dashDuration(rep.StepDurationNs), dashDuration(rep.StepWarmupNs), dashDuration(rep.SLOP99Ns), 100*rep.MaxBehind)
	switch {
	case cfg.Trials > 1:
		fmt.Fprintf(w, " (%d trials a rate; it holds when more than half do)", cfg.Trials)
	case cfg.Confirm:
		fmt.Fprint(w, " (a failing rate is run twice)")
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "risks: %s\n\n", rep.RisksFrom)
}

// printLines writes the table, one line per strategy, and returns the
// strategies that fit the target (with their headroom), those that do
// not, and those without exclusion.
func printLines(w io.Writer, rep Report) (fit, nofit, noExcl []string) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	target := rep.TargetRate
	head := "STRATEGY\tMAX PAY/S\tLIMITED BY"
	if target > 0 {
		head += fmt.Sprintf("\tFITS %.0f/s\tHEADROOM", target)
	}
	head += "\tACQUIRE p50 / p99\tAT\tRISKS UNDER FAULTS"
	fmt.Fprintln(tw, head)
	for _, r := range rep.Strategies {
		if !r.Exclusion {
			noExcl = append(noExcl, r.Strategy)
		}
		if target > 0 {
			switch fitVerdict(r) {
			case "yes":
				fit = append(fit, fmt.Sprintf("%s (%.1f×)", r.Strategy, r.Headroom))
			case "no":
				nofit = append(nofit, r.Strategy)
			}
		}
		fmt.Fprintln(tw, lineRow(r, target))
	}
	_ = tw.Flush()
	return fit, nofit, noExcl
}

// lineRow is r's row of the table; the fit columns only with a target.
func lineRow(r Line, target float64) string {
	name := r.Strategy
	if !r.Exclusion {
		name += " (no exclusion)"
	}
	maxRate := "< " + strconv.FormatFloat(minRateTried(r.Steps), 'f', -1, 64)
	if r.MaxRate > 0 {
		maxRate = fmt.Sprintf("%.0f", r.MaxRate)
	}
	limited := r.LimitedBy
	if r.Error != "" {
		limited = "error: " + strings.Join(strings.Fields(r.Error), " ")
	}
	line := fmt.Sprintf("%s\t%s\t%s", name, maxRate, limited)
	if target > 0 {
		line += fmt.Sprintf("\t%s\t%.2f×", fitVerdict(r), r.Headroom)
	}
	c := r.Cost
	at, acquire := "-", "- / -"
	if c.AtRate > 0 {
		at = fmt.Sprintf("%.0f/s", c.AtRate)
		acquire = dashDuration(c.AcquireP50Ns) + " / " + dashDuration(c.AcquireP99Ns)
	}
	risk := r.Risks
	if r.SweepUnsafe > 0 {
		risk = fmt.Sprintf("UNSAFE in the sweep (%d); ", r.SweepUnsafe) + risk
	}
	return line + fmt.Sprintf("\t%s\t%s\t%s", acquire, at, risk)
}

// fitVerdict is r's FITS cell: a strategy without exclusion is no lock
// whatever its rate.
func fitVerdict(r Line) string {
	switch {
	case !r.Exclusion:
		return "not a lock"
	case r.Fits:
		return "yes"
	}
	return "no"
}

// dashDuration formats a latency; one the step did not report is 0 in
// plan.json, a dash here.
func dashDuration(ns int64) string {
	if ns == 0 {
		return results.Dash
	}
	return results.FormatDuration(ns)
}

// minRateTried is the lowest rate of steps (0: none).
func minRateTried(steps []Step) float64 {
	m := 0.0
	for i, st := range steps {
		if i == 0 || st.Rate < m {
			m = st.Rate
		}
	}
	return m
}
