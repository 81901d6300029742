// The verdict tables and printing: the cells that did not apply, the
// availability around each fault window, what WAIT buys and costs, and
// --dry-run's list of cells with their estimated time.

package cli

import (
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/lockbench/lockbench/results"
)

// printNotApplicable lists the cells that did not apply, by reason.
func printNotApplicable(w io.Writer, skipped []string) {
	var reasons []string
	cells := map[string][]string{}
	for _, s := range skipped {
		rest, ok := strings.CutPrefix(s, notApplicablePrefix)
		if !ok {
			continue
		}
		cell, why, _ := strings.Cut(rest, ": ")
		if _, seen := cells[why]; !seen {
			reasons = append(reasons, why)
		}
		cells[why] = append(cells[why], cell)
	}
	for _, why := range reasons {
		fmt.Fprintf(w, "\nNot applicable, not run (%s): %s\n", why, strings.Join(cells[why], "; "))
	}
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// windowTable shows what each fault did to availability while it lasted:
// the lock cycles completed per second before, during and after the fault
// window. They come from the run's latency intervals (250ms for fault
// runs), each interval's cycles shared out in proportion to its overlap
// with the three spans, so the figures are approximate at the window's
// edges.
func windowTable(w io.Writer, ss []results.Summary, rates [][3]float64) error {
	fmt.Fprintln(w, "Lock cycles completed per second before, during and after each fault window (from the latency intervals, approximate at the edges; with trials, the median trial):")
	fmt.Fprintln(w)
	type key struct {
		strategy, variant, fault string
		fencing                  bool
	}
	type row struct {
		s     results.Summary
		rates [3][]float64
	}
	var order []key
	rows := map[key]*row{}
	for i, s := range ss {
		if s.FaultWindow == nil {
			continue
		}
		k := key{s.Strategy, s.Variant, s.Fault, s.Fencing}
		if rows[k] == nil {
			order = append(order, k)
			rows[k] = &row{s: s}
		}
		for j, v := range rates[i] {
			rows[k].rates[j] = append(rows[k].rates[j], v)
		}
	}
	// The strategy column names the variant too, as the verdict table
	// does: two rows of one strategy and fault differ in it.
	label := func(k key) string {
		if k.variant == "" {
			return k.strategy
		}
		return k.strategy + " [" + k.variant + "]"
	}
	width := len("strategy")
	for _, k := range order {
		width = max(width, len(label(k)))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%-*s %-12s %-7s %-15s %8s %8s %8s\n", width, "strategy", "fault", "fencing", "window", "before", "during", "after")
	for _, k := range order {
		r := rows[k]
		rate := func(i int) string {
			if e := results.EstimateOf(r.rates[i]); e.OK() {
				return fmt.Sprintf("%.0f", e.Median)
			}
			return "-"
		}
		win := fmt.Sprintf("%.1f–%.1fs", time.Duration(r.s.FaultWindow.StartNs).Seconds(), time.Duration(r.s.FaultWindow.EndNs).Seconds())
		fmt.Fprintf(&b, "%-*s %-12s %-7s %-15s %8s %8s %8s\n", width, label(k), r.s.Fault, onOff(r.s.Fencing), win, rate(0), rate(1), rate(2))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// windowRates are the lock cycles per second of r before, during and
// after its fault window; NaN for a span shorter than 100ms.
func windowRates(r results.Run) [3]float64 {
	win := r.Summary.FaultWindow
	spans := [3][2]int64{{math.MinInt64, win.StartNs}, {win.StartNs, win.EndNs}, {win.EndNs, math.MaxInt64}}
	var n, secs [3]float64
	for _, iv := range r.Intervals {
		length := float64(iv.EndNs - iv.StartNs)
		if length <= 0 {
			continue
		}
		var c float64
		if h := iv.Hists[results.Critical]; h != nil {
			c = float64(h.TotalCount())
		}
		for k, sp := range spans {
			overlap := float64(min(iv.EndNs, sp[1]) - max(iv.StartNs, sp[0]))
			if overlap > 0 {
				n[k] += c * overlap / length
				secs[k] += time.Duration(overlap).Seconds()
			}
		}
	}
	var out [3]float64
	for k := range out {
		out[k] = math.NaN()
		if secs[k] >= 0.1 {
			out[k] = n[k] / secs[k]
		}
	}
	return out
}

// waitTable shows what WAIT buys and what it costs: each cell of a
// single-node Redis strategy that also ran with WAIT (--redis-wait), both
// ways, with its verdict, availability, give-ups and acquire latency. It
// writes nothing when no cell ran with WAIT.
func waitTable(w io.Writer, ss []results.Summary) error {
	type cell struct{ strategy, fault, variant string }
	withWait := map[cell]bool{}
	base := func(v string) (string, bool) {
		var keep []string
		waited := false
		for _, p := range strings.Split(v, ",") {
			if strings.HasPrefix(p, "wait=") {
				waited = true
				continue
			}
			keep = append(keep, p)
		}
		return strings.Join(keep, ","), waited
	}
	for _, s := range ss {
		if b, waited := base(s.Variant); waited {
			withWait[cell{s.Strategy, s.Fault, b}] = true
		}
	}
	if len(withWait) == 0 {
		return nil
	}
	stat := func(s *results.Summary, phase, st string) string {
		if v, ok := s.Latency[phase].Value(st); ok {
			return results.FormatDuration(v)
		}
		return results.Dash
	}
	var b strings.Builder
	fmt.Fprintln(&b, "\nWhat WAIT buys and costs (the same cells without and with it):")
	fmt.Fprintln(&b)
	fmt.Fprintf(&b, "%-16s %-10s %-42s %-8s %12s %12s %12s %12s %12s\n", "strategy", "fault", "variant", "verdict", "availability", "not acquired", "acquire p50", "acquire p99", "total p99")
	for _, s := range ss {
		if bv, _ := base(s.Variant); !withWait[cell{s.Strategy, s.Fault, bv}] {
			continue
		}
		fmt.Fprintf(&b, "%-16s %-10s %-42s %-8s %11.1f%% %12d %12s %12s %12s\n", s.Strategy, s.Fault, s.Variant, s.Label(),
			100*s.Availability, s.NotAcquired, stat(&s, "acquire", results.StatP50), stat(&s, "acquire", results.StatP99), stat(&s, "total", results.StatP99))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// printCases is --dry-run: the cells a command would run, each with its
// estimated time, and the total; it runs nothing and starts no server.
func printCases(w io.Writer, what string, cases []cell, trials, lanes int) error {
	var b strings.Builder
	var sum time.Duration
	fmt.Fprintf(&b, "%-44s %-9s %-9s %8s %9s\n", "cell", "instances", "payments", "trials", "estimate")
	for _, c := range cases {
		d := estimate(c.sc) * time.Duration(trials)
		sum += d
		fmt.Fprintf(&b, "%-44s %-9s %-9d %8d %9s\n", c.label(), c.sc.InstanceMode, c.sc.Payments, trials, fmtEstimate(d))
	}
	inLanes := ""
	if lanes > 1 {
		inLanes = fmt.Sprintf(" in %d lanes", lanes)
	}
	fmt.Fprintf(&b, "\n%s: %d cells × %d trials = %d runs, %s%s with server start-up (estimated; nothing was run)\n",
		what, len(cases), trials, len(cases)*trials, fmtEstimate(sum/time.Duration(lanes)+time.Duration(lanes)*estimateServers), inLanes)
	_, err := io.WriteString(w, b.String())
	return err
}
