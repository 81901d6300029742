package cli

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/lockbench/lockbench/report"
	"github.com/lockbench/lockbench/results"
)

// runReport is `lockbench report DIR`: re-render the charts, report.md and
// report.html from the run directory's data files alone. Ctrl-C stops it
// between two files: those written are whole, the others as they were.
func runReport(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	dir, err := parseReport(args, stdout, stderr)
	if err != nil {
		return err
	}
	if err := report.Render(ctx, dir); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "report: %s/%s, %s/%s\n", dir, results.ReportFile, dir, results.ReportHTMLFile)
	return nil
}

// parseReport parses and checks the arguments of `lockbench report`: the
// run directory.
func parseReport(args []string, stdout, stderr io.Writer) (string, error) {
	return parseRunDirArg("report", args, stdout, stderr)
}

// parseRunDirArg parses the arguments of command, which takes one run
// directory and no flags.
func parseRunDirArg(command string, args []string, stdout, stderr io.Writer) (string, error) {
	fs := newFlagSet(command, stderr)
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		return "", parseFlags(fs, args, stdout)
	}
	if fs.NArg() != 1 {
		return "", usageErr("%s: want exactly one run directory, got %d arguments", command, fs.NArg())
	}
	dir := fs.Arg(0)
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return "", usageErr("%s: %q is not a run directory", command, dir)
	}
	return dir, nil
}
