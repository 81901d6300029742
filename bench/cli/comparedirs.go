package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/lockbench/lockbench/report"
	"github.com/lockbench/lockbench/results"
)

// ErrRegression is returned by compare with --fail-on-regression when a
// figure slowed down significantly by more than the threshold or a verdict
// turned unsafe; the command exits 4.
var ErrRegression = errors.New("regression beyond --fail-on-regression")

// runCompareDirs is `lockbench compare OLD NEW`: two run directories side
// by side, cell by cell, with the significance of every change
// (report.CompareRuns). It runs nothing; directories of every layout
// lockbench wrote read, those from before trials as one trial per cell.
func runCompareDirs(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("compare", stderr)
	failPct := math.NaN()
	fs.Func("fail-on-regression", "exit 4 when a figure slows down significantly by more than PCT percent, or a verdict turns unsafe", func(v string) error {
		p, err := strconv.ParseFloat(strings.TrimSuffix(v, "%"), 64)
		if err != nil || !(p >= 0) || math.IsInf(p, 0) { // refuses NaN too
			return errors.New("want a percentage ≥ 0 such as 5")
		}
		failPct = p
		return nil
	})
	// Flags may come before or after the two directories.
	var dirs []string
	rest := args
	for {
		if err := parseFlagsAllowArgs(fs, rest, stdout); err != nil {
			return err
		}
		if fs.NArg() == 0 {
			break
		}
		dirs = append(dirs, fs.Arg(0))
		rest = fs.Args()[1:]
	}
	if len(dirs) != 2 {
		return usageErr("compare: want two run directories, OLD and NEW, got %d", len(dirs))
	}
	var sides [2]struct {
		ss   []results.Summary
		meta results.Meta
	}
	for i, dir := range dirs {
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			return usageErr("compare: %s is not a run directory", dir)
		}
		ss, meta, err := report.ReadSummaries(dir)
		if err != nil {
			return usageErr("compare: %s is not a run directory: %s", dir, oneLine(err.Error()))
		}
		sides[i].ss, sides[i].meta = ss, meta
	}
	c := report.CompareRuns(sides[0].ss, sides[0].meta, sides[1].ss, sides[1].meta)
	if err := report.WriteComparison(stdout, c, dirs[0], dirs[1]); err != nil {
		return err
	}
	if math.IsNaN(failPct) {
		return nil
	}
	if regs := c.Regressions(failPct); len(regs) > 0 {
		return fmt.Errorf("%w (%g%%): %s", ErrRegression, failPct, strings.Join(regs, "; "))
	}
	return nil
}

// parseFlagsAllowArgs is parseFlags for a command that takes arguments:
// parsing stops at the first one and leaves it in fs.Args.
func parseFlagsAllowArgs(fs *flag.FlagSet, args []string, stdout io.Writer) error {
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		fs.SetOutput(stdout)
		fmt.Fprintf(stdout, "usage of %s OLD NEW:\n", fs.Name())
		fs.PrintDefaults()
		return flag.ErrHelp
	}
	if err != nil {
		return flagUsageErr(fs, err)
	}
	return nil
}
