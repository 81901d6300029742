package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/lockbench/lockbench/internal/usage"
)

// ErrUnsafe is returned by run and verdicts with --fail-on-unsafe when a
// strategy lost safety; the command exits 3.
var ErrUnsafe = errors.New("lockbench: unsafe run with --fail-on-unsafe")

// ErrUsage marks bad command-line input; the command exits 2.
var ErrUsage = errors.New("usage")

// usageErr wraps a message as a usage error.
func usageErr(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrUsage}, args...)...)
}

type command struct {
	name, args, help string
	run              func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

func commands() []command {
	return []command{
		{"strategies", "", "list the lock strategies", runStrategies},
		{"up", "", "start local servers, print their endpoints, stop on Ctrl-C", runUp},
		{"run", "[flags]", "one scenario per strategy; writes a run directory", runRun},
		{"verdicts", "[flags]", "every strategy under every fault: the verdict table", runVerdicts},
		{"matrix", "[--quick]", "the published matrix: strategies × contention × faults", runMatrix},
		{"report", "DIR", "re-render charts and report.md from a run directory", runReport},
		{"plan", "[flags]", "capacity planning from a rate sweep", runPlan},
		{"compare-redis", "[flags]", "setnx's lock-cycle rate against redis-benchmark's (harness check)", runCompare},
	}
}

// Run runs the lockbench command with args (without the program name).
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		printHelp(stdout)
		if len(args) == 0 {
			return usageErr("missing command")
		}
		return nil
	}
	for _, c := range commands() {
		if c.name == args[0] {
			return c.run(ctx, args[1:], stdout, stderr)
		}
	}
	return usageErr("unknown command %q; want one of %s", args[0], strings.Join(names(), ", "))
}

func names() []string {
	var n []string
	for _, c := range commands() {
		n = append(n, c.name)
	}
	return n
}

func printHelp(w io.Writer) {
	fmt.Fprintln(w, "lockbench: speed and safety of distributed locks, side by side")
	fmt.Fprintln(w)
	for _, c := range commands() {
		fmt.Fprintf(w, "  lockbench %-13s %-10s %s\n", c.name, c.args, c.help)
	}
	fmt.Fprintln(w, "\n`lockbench COMMAND -h` lists a command's flags.")
}

// ExitCode prints err (one line) and maps it to its exit code (package doc).
func ExitCode(err error, stderr io.Writer) int {
	var ue *usage.Error
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, ErrUnsafe):
		fmt.Fprintln(stderr, "lockbench:", err)
		return 3
	case errors.Is(err, ErrUsage), errors.As(err, &ue):
		fmt.Fprintln(stderr, "lockbench:", strings.TrimPrefix(err.Error(), "usage: "))
		return 2
	}
	// One line, even when a driver's error spans several.
	fmt.Fprintln(stderr, "lockbench:", strings.Join(strings.Fields(err.Error()), " "))
	return 1
}
