package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	_ "github.com/lockbench/lockbench/servers/adapterenv" // adapters reach the servers

	"github.com/lockbench/lockbench/bench/selfcheck"
	"github.com/lockbench/lockbench/internal/usage"
	"github.com/lockbench/lockbench/results"
	"github.com/lockbench/lockbench/servers"
)

// ErrUnsafe is returned by run and verdicts with --fail-on-unsafe when a
// strategy lost safety; the command exits 3.
var ErrUnsafe = errors.New("unsafe run with --fail-on-unsafe")

// ErrUsage marks bad command-line input; the command exits 2.
var ErrUsage = errors.New("usage")

// ErrInterrupted is what Run returns for a command cut short by Ctrl-C
// (SIGINT) or SIGTERM, wrapping the command's own error if it had one; the
// command exits 130. The command keeps its partial results and has said
// where (one line on stderr), so that a script can tell a partial result
// from a finished one.
var ErrInterrupted = errors.New("interrupted")

// usageErr wraps a message as a usage error, on one line whatever the
// values it quotes hold.
func usageErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrUsage, oneLine(fmt.Sprintf(format, args...)))
}

// command is one lockbench command: its name, its arguments and help for
// the help text, what runs it, and its parse step alone (check): it parses
// and checks the arguments as the command does, reading the files they
// name, and starts nothing (no server, no run directory, no load) but an
// exec: strategy's `PATH --hello`. check and the fuzz target drive it.
type command struct {
	name, args, help string
	run              func(ctx context.Context, args []string, stdout, stderr io.Writer) error
	check            func(args []string) error
}

func commands() []command {
	// The check of strategies and compare runs them: strategies starts
	// nothing, compare only reads the two directories it compares.
	// adapter-check's parse step only forms the exec: name.
	strategiesCheck := func(args []string) error {
		return runStrategies(context.Background(), args, io.Discard, io.Discard)
	}
	compareCheck := func(args []string) error {
		return runCompareDirs(context.Background(), args, io.Discard, io.Discard)
	}
	return []command{
		{"strategies", "", "list the lock strategies", runStrategies, strategiesCheck},
		{"up", "", "start local servers, print their endpoints, stop on Ctrl-C", runUp, checkOf(parseUp)},
		{"run", "[flags]", "one scenario per strategy; writes a run directory", runRun, checkOf(parseRun)},
		{"verdicts", "[flags]", "every strategy under every fault: the verdict table", runVerdicts, checkOf(parseVerdicts)},
		{"matrix", "[--quick]", "the published matrix: strategies × contention × faults", runMatrix, checkOf(parseMatrix)},
		{"report", "DIR", "re-render charts and report.md from a run directory", runReport, checkOf(parseReport)},
		{"pack", "DIR", "pack a finished run directory for publishing", runPack, checkOf(parsePack)},
		{"check", "DIR", "re-check a run directory's verdicts from its histories (--history): the second judge", runCheck, checkOf(parseCheck)},
		{"plan", "[flags]", "capacity planning from a rate sweep", runPlan, checkOf(parsePlan)},
		{"compare", "OLD NEW", "two run directories side by side, with significance", runCompareDirs, compareCheck},
		{"compare-redis", "[flags]", "setnx's lock-cycle rate against redis-benchmark's (harness check)", runSelfCheck(selfcheck.Redis), checkOf(parseSelfCheck(selfcheck.Redis))},
		{"compare-postgres", "[flags]", "pg-onconflict's lock-cycle rate against pgbench's (harness check)", runSelfCheck(selfcheck.Postgres), checkOf(parseSelfCheck(selfcheck.Postgres))},
		{"agent", "[flags]", "run instances here for a coordinator elsewhere (--listen HOST:PORT; see --agents)", runAgent, checkOf(parseAgent)},
		{"adapter-check", "PATH [ARG]", "the conformance cases against an adapter (docs/adapters.md), one line each", runAdapterCheck, checkOf(parseAdapterCheck)},
	}
}

// checkOf is the check of a command whose parse step is parse.
func checkOf[T any](parse func(args []string, stdout, stderr io.Writer) (T, error)) func([]string) error {
	return func(args []string) error {
		_, err := parse(args, io.Discard, io.Discard)
		return err
	}
}

// Run runs the lockbench command with args (without the program name). A
// command that ctx cancelled returns ErrInterrupted.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c, err := lookup(args, stdout)
	if c == nil {
		return err
	}
	// A run killed outright left its servers' directory: any command
	// removes it, not only the next that starts servers.
	servers.RemoveStaleTempDirs()
	err = c.run(ctx, args[1:], stdout, stderr)
	if ctx.Err() == nil || errors.Is(err, flag.ErrHelp) || isUsage(err) {
		return err
	}
	switch {
	case err == nil || errors.Is(err, context.Canceled):
		return ErrInterrupted // the command stopped because it was told to
	case errors.Is(err, ErrInterrupted):
		return err // it says so already
	}
	return fmt.Errorf("%w: %w", ErrInterrupted, err)
}

// check is Run's parse step alone: it returns what Run would return for
// bad input (a usage error, or nil for input that is good) and starts
// nothing.
func check(args []string) error {
	c, err := lookup(args, io.Discard)
	if c == nil {
		return err
	}
	return c.check(args[1:])
}

// lookup finds the command args[0] names. For help (no command, help, -h)
// it prints the help to stdout and returns a nil command, with a usage
// error when the command is missing.
func lookup(args []string, stdout io.Writer) (*command, error) {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		printHelp(stdout)
		if len(args) == 0 {
			return nil, usageErr("missing command")
		}
		return nil, nil
	}
	for _, c := range commands() {
		if c.name == args[0] {
			return &c, nil
		}
	}
	return nil, usageErr("unknown command %q; want one of %s", args[0], strings.Join(names(), ", "))
}

// isUsage reports whether err is bad input (exit 2).
func isUsage(err error) bool {
	var ue *usage.Error
	return errors.Is(err, ErrUsage) || errors.As(err, &ue)
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
	width := 0
	for _, c := range commands() {
		width = max(width, len(c.name))
	}
	for _, c := range commands() {
		fmt.Fprintf(w, "  lockbench %-*s %-10s %s\n", width, c.name, c.args, c.help)
	}
	fmt.Fprintln(w, "\n`lockbench COMMAND -h` lists a command's flags.")
}

// ExitCode prints err on one line (even when a driver's error spans
// several; files that could not be written get one line per kind of file)
// and maps it to its exit code: 0 done (and -h), 2 bad usage, 3
// unsafe with --fail-on-unsafe, 4 a regression with --fail-on-regression,
// 5 lockbench check disagreeing with a run's summary, 130 interrupted (whatever else the command returned: its results are
// partial), 1 anything else. An interruption with no error of its own
// prints nothing: the command has said where its partial results are.
func ExitCode(err error, stderr io.Writer) int {
	// Redact: the last line of defence for a password an error quotes.
	say := func(err error) { fmt.Fprintln(stderr, "lockbench:", servers.Redact(oneLine(err.Error()))) }
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return 0
	}
	// Files that could not be written: one line per kind, then the rest.
	if lines, rest := results.WriteFailures(err); len(lines) > 0 {
		for _, l := range lines {
			fmt.Fprintln(stderr, "lockbench:", servers.Redact(oneLine(l)))
		}
		if rest == nil {
			return 1
		}
		return ExitCode(rest, stderr)
	}
	switch {
	case errors.Is(err, ErrInterrupted):
		if err != ErrInterrupted {
			say(err)
		}
		return 130
	case isUsage(err):
		fmt.Fprintln(stderr, "lockbench:", servers.Redact(oneLine(strings.TrimPrefix(err.Error(), "usage: "))))
		return 2
	case errors.Is(err, ErrUnsafe):
		say(err)
		return 3
	case errors.Is(err, ErrRegression):
		say(err)
		return 4
	case errors.Is(err, ErrDisagree):
		say(err)
		return 5
	}
	say(err)
	return 1
}

// sayInterruptedAtExit is, for a command's defer, the line an interrupted
// command ends with on stderr, whichever way it returns: where its partial
// results are, or that none were kept.
func sayInterruptedAtExit(ctx context.Context, stderr io.Writer, d *runDir) {
	if ctx.Err() == nil {
		return
	}
	if len(d.runs) == 0 {
		fmt.Fprintln(stderr, "interrupted before a run finished: no results kept")
		return
	}
	fmt.Fprintf(stderr, "interrupted: partial results in %s\n", d.dir)
}
