package selfcheck

import (
	"context"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/lockbench/lockbench/results"
)

// cycleRate is one measurement of a comparison: lock cycles per second,
// and the client's CPU time (user and system, from getrusage) per cycle:
// on a shared machine a much steadier figure than the rate, which moves
// with whatever else the cores are doing.
type cycleRate struct {
	perSec float64
	cpu    time.Duration
}

// comparison is a harness check (compare-redis, compare-postgres): one
// lock cycle measured three ways, with the server's own benchmark tool
// (native), with the Go client alone (bare: the strategy's client
// settings, no harness) and with lockbench.
type comparison struct {
	name string
	// native, bare and ours head the rate columns; nativeShort and
	// bareShort name them in the ratios' columns.
	native, bare, ours     string
	nativeShort, bareShort string
	// bareWhy says what the ratio of bare to native is.
	bareWhy string
	rounds  int
	// failBelow, when above 0, makes run return an error (exit 4) when the
	// median ratio of ours to bare is below it.
	failBelow float64
	// profile, when set, is the file the counted rounds' CPU profile goes
	// to.
	profile string
	// library is the import path prefixes of the bare client's library
	// (go-redis, pgx), whose calls are the yardstick of the profile's
	// split (printProfileSplit).
	library []string
	// measure holds the three measurements: native, bare and ours. A
	// round runs native first, then bare and ours in an order that
	// alternates from round to round (roundOrder).
	measure [3]func() (cycleRate, error)
	// settle, when set, runs before each measurement but the first,
	// untimed: it puts the server back in the state every measurement
	// starts from, so that none pays for what the one before it left
	// behind. Before the first there is nothing to clean, and cleaning
	// can mislead: an empty table just vacuumed tells Postgres's planner
	// that it is empty, and pgbench's prepared claim then scanned the
	// whole table for every row it added (660 cycles/s, against 9,000).
	settle func() error
}

// roundOrder is the order round r runs the measurements in: the native
// tool first, then the bare client and lockbench, lockbench first in the
// odd rounds. Whatever drifts within a round (the server's tables and
// memory grow with every cycle; a neighbour's load rises or falls) then
// favours each of the two in turn instead of always the one that runs
// first, and their ratio, taken within the round, carries no bias for
// the order.
func roundOrder(r int) [3]int {
	if r%2 == 1 {
		return [3]int{0, 2, 1}
	}
	return [3]int{0, 1, 2}
}

// round runs round r's three measurements (roundOrder) and returns them
// as native, bare, ours, with the share of the machine's CPU time the
// hypervisor stole while they ran (results.StealPercent; NaN when unknown).
func (c comparison) round(r int) (m [3]cycleRate, steal float64, err error) {
	t0 := results.ReadMachineTime()
	defer func() { steal = results.StealPercent(t0, results.ReadMachineTime()) }()
	for k, i := range roundOrder(r) {
		if c.settle != nil && (r > 0 || k > 0) {
			if err := c.settle(); err != nil {
				return m, 0, err
			}
		}
		if m[i], err = c.measure[i](); err != nil {
			return m, 0, err
		}
	}
	return m, 0, nil
}

// run runs a warm-up round and c.rounds counted rounds, printing a row for
// each, then the medians and the closing ratio lines.
//
// The three run in turn (roundOrder), and each round's ratios are taken
// within the round: on a shared machine the rates drift by tens of
// percent over a minute, and a ratio of figures measured a minute apart
// would measure the drift. The medians of the rounds' ratios are the
// result. Ctrl-C ends it with the rounds done.
func (c comparison) run(ctx context.Context, stdout, stderr io.Writer) error {
	rp, err := openRoundsProfile(c.profile)
	if err != nil {
		return err
	}
	defer rp.stop()
	fmt.Fprintf(stdout, "cpu µs: each client's CPU time per lock cycle (user + system); harness: lockbench's less %s's\n\n", c.bare)
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "round\t%s\t%s\t%s\tlockbench/%s\tlockbench/%s\t%s/%s\tcpu µs %s\tcpu µs %s\tcpu µs lockbench\tcpu µs harness\tsteal %%\t\n",
		c.native, c.bare, c.ours, c.nativeShort, c.bareShort, c.bareShort, c.nativeShort, c.nativeShort, c.bareShort)
	ms, steals, err := c.runRounds(ctx, tw, stderr, rp)
	if err != nil {
		return err
	}
	if len(ms) == 0 {
		tw.Flush()
		fmt.Fprintln(stderr, "interrupted before a counted round finished: no ratio")
		return nil
	}
	var med [10]float64
	for i := range med {
		med[i] = median(column(ms, i))
	}
	fmt.Fprintf(tw, "median\t%s\n", formatRow(med, medianSteal(steals)))
	tw.Flush()
	fmt.Fprintln(stdout)

	c.printRatios(stdout, ms, med)
	vsBare := column(ms, 4)
	if err := c.printNotes(stdout, rp, med, steals, vsBare); err != nil {
		return err
	}
	if ctx.Err() != nil {
		fmt.Fprintf(stderr, "interrupted: %d of %d rounds done\n", len(ms), c.rounds)
		return nil
	}
	if got := median(vsBare); c.failBelow > 0 && got < c.failBelow {
		return fmt.Errorf("%w: lockbench / %s %.2f < %.2f", ErrBelowTarget, c.bare, got, c.failBelow)
	}
	return nil
}

// runRounds runs the warm-up round and the counted rounds, a table row
// each, and returns the counted rounds' measurements and steal. When ctx
// is done it returns the rounds done.
func (c comparison) runRounds(ctx context.Context, tw, stderr io.Writer, rp *roundsProfile) (ms [][3]cycleRate, steals []float64, err error) {
	// Round 0 warms up all three (connections, the Go heap, the server's
	// tables) and is shown but not counted.
	for r := range c.rounds + 1 {
		if r == 1 {
			// The profile covers the counted rounds.
			if err := rp.start(); err != nil {
				return nil, nil, err
			}
		}
		m, steal, err := c.round(r)
		if ctx.Err() != nil {
			break // interrupted: report the rounds done
		}
		if err != nil {
			return nil, nil, err
		}
		name := strconv.Itoa(r)
		if r == 0 {
			name = "warm-up"
		} else {
			ms, steals = append(ms, m), append(steals, steal)
		}
		row := roundFigures(m)
		fmt.Fprintf(tw, "%s\t%s\n", name, formatRow(row, steal))
		fmt.Fprintf(stderr, "%s: round %d of %d done (lockbench/%s %.2f)\n", c.name, r, c.rounds, c.bareShort, row[4])
	}
	return ms, steals, nil
}

// printRatios prints the closing ratio lines, each the median of the
// rounds' own ratios, and the medians of the CPU per cycle (med).
func (c comparison) printRatios(stdout io.Writer, ms [][3]cycleRate, med [10]float64) {
	ours, vsBare, bareVsNative := column(ms, 3), column(ms, 4), column(ms, 5)
	labels := []string{"ratio lockbench / " + c.native + ":", "ratio lockbench / " + c.bare + ":", "ratio " + c.bareShort + " / " + c.native + ":"}
	width := 0
	for _, l := range labels {
		width = max(width, len(l))
	}
	line := func(i int, format string, args ...any) {
		fmt.Fprintf(stdout, "%-*s %s\n", width, labels[i], fmt.Sprintf(format, args...))
	}
	line(0, "%.2f (median of %d rounds, %s)", median(ours), len(ms), spread(ours))
	line(1, "%.2f (median of %d rounds, %s; the harness's own cost; target ≥ %.2f)",
		median(vsBare), len(ms), spread(vsBare), harnessTarget)
	line(2, "%.2f (%s)", median(bareVsNative), c.bareWhy)
	var cpuRatio []float64
	for _, m := range ms {
		cpuRatio = append(cpuRatio, float64(m[2].cpu)/float64(m[1].cpu))
	}
	fmt.Fprintf(stdout, "cpu per cycle (medians): %s %.1f µs, %s %.1f µs, lockbench %.1f µs; the harness %+.1f µs, lockbench / %s %.2f (target ≤ %.2f)\n",
		c.nativeShort, med[6], c.bare, med[7], med[8], med[9], c.bare, median(cpuRatio), 1/harnessTarget)
}

// printNotes stops the profile and prints its split, then the rounds'
// steal and the ratio of lockbench to bare (vsBare) over the quiet rounds.
func (c comparison) printNotes(stdout io.Writer, rp *roundsProfile, med [10]float64, steals, vsBare []float64) error {
	p, err := rp.stop()
	if err != nil {
		return err
	}
	if p != nil {
		bare, ours := splitProfile(p, c.library)
		c.printProfileSplit(stdout, bare, ours, med[7])
	}
	if steal := knownSteal(steals); len(steal) > 0 {
		fmt.Fprintf(stdout, "steal (the hypervisor's share of this machine's CPU time, /proc/stat): median %.1f%% a round, %.1f%%–%.1f%%; a round with much of it measured the neighbours as well\n",
			median(steal), slices.Min(steal), slices.Max(steal))
	}
	if quiet := quietRatios(vsBare, steals); len(quiet) > 0 && len(quiet) < len(vsBare) {
		fmt.Fprintf(stdout, "quiet rounds (steal under %.0f%%): %d of %d, lockbench / %s %.2f by median (range %.2f–%.2f)\n",
			quietSteal, len(quiet), len(vsBare), c.bare, median(quiet), slices.Min(quiet), slices.Max(quiet))
	}
	return nil
}

// column is figure i (roundFigures) of every round of ms.
func column(ms [][3]cycleRate, i int) []float64 {
	var xs []float64
	for _, m := range ms {
		xs = append(xs, roundFigures(m)[i])
	}
	return xs
}

// medianSteal is the median of the steal that could be read (NaN: none).
func medianSteal(steals []float64) float64 {
	if steal := knownSteal(steals); len(steal) > 0 {
		return median(steal)
	}
	return math.NaN()
}

// formatRow is the table cells of a round's figures (roundFigures) and
// its steal percentage ("-" when unknown).
func formatRow(f [10]float64, steal float64) string {
	st := "-"
	if !math.IsNaN(steal) {
		st = fmt.Sprintf("%.1f", steal)
	}
	return fmt.Sprintf("%.0f\t%.0f\t%.0f\t%.2f\t%.2f\t%.2f\t%.1f\t%.1f\t%.1f\t%+.1f\t%s\t", f[0], f[1], f[2], f[3], f[4], f[5], f[6], f[7], f[8], f[9], st)
}

// quietSteal is the steal percentage under which a round counts as quiet
// (quietRatios): 5%.
const quietSteal = 5.0

// quietRatios is the ratios of the rounds whose steal could be read and
// was under quietSteal: the rounds that measured the clients rather than
// the neighbours. The closing ratio lines stay the medians of all rounds;
// this is one more line beside them.
func quietRatios(ratios, steals []float64) []float64 {
	var q []float64
	for i, r := range ratios {
		if steals[i] < quietSteal { // false for NaN
			q = append(q, r)
		}
	}
	return q
}

// knownSteal is the rounds' steal percentages that could be read.
func knownSteal(steals []float64) []float64 {
	return slices.DeleteFunc(slices.Clone(steals), math.IsNaN)
}

// roundFigures are a round's columns: the three rates, the three ratios,
// the three CPU times per cycle (µs) and the harness's share of it.
func roundFigures(m [3]cycleRate) [10]float64 {
	us := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
	return [10]float64{
		m[0].perSec, m[1].perSec, m[2].perSec,
		m[2].perSec / m[0].perSec, m[2].perSec / m[1].perSec, m[1].perSec / m[0].perSec,
		us(m[0].cpu), us(m[1].cpu), us(m[2].cpu), us(m[2].cpu - m[1].cpu),
	}
}

// spread describes how far the rounds' ratios xs leave their median in
// doubt: their range, and before it the median's 95% confidence interval
// (results.EstimateOf, from order statistics) when there are rounds
// enough for it to be narrower than the range (from 8: with 7 or fewer
// the interval is the range). On a shared 2-core machine one round's
// ratio can land 10% either side of the median; forty rounds put the
// median within about 0.01.
func spread(xs []float64) string {
	lo, hi := slices.Min(xs), slices.Max(xs)
	if e := results.EstimateOf(xs); e.CI && (e.Lo > lo || e.Hi < hi) {
		return fmt.Sprintf("95%% CI %.2f–%.2f, range %.2f–%.2f", e.Lo, e.Hi, lo, hi)
	}
	return fmt.Sprintf("range %.2f–%.2f", lo, hi)
}

// median returns the median of xs (the mean of the middle two for an even
// count); xs is not modified.
func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
