package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/lockbench/lockbench/results"
)

// The check of `lockbench pack`, kept beside the command.
func init() { checks["pack"] = checkOf(parsePack) }

// runPack is `lockbench pack DIR`: pack a finished run directory for
// publishing (results.Pack). Its data go into one archive, whose SHA-256
// meta.json records; meta.json, report.md, report.html and the PNG charts
// stay beside it. `lockbench report` and `lockbench compare` read the
// packed directory as they read the unpacked one. It refuses a directory
// written by a build with uncommitted changes.
func runPack(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	dir, err := parsePack(args, stdout, stderr)
	if err != nil {
		return err
	}
	if err := results.Pack(dir); err != nil {
		return err
	}
	// Read it back as report and compare will, archive checked.
	meta, _, err := results.ReadDirData(dir)
	if err != nil {
		return err
	}
	a := meta.Archive
	fmt.Fprintf(stdout, "packed: %s, %d files, %.1f MB, sha256 %s\n",
		filepath.Join(dir, a.File), a.Files, float64(a.Bytes)/1e6, a.SHA256)
	return nil
}

// parsePack parses and checks the arguments of `lockbench pack`: the run
// directory.
func parsePack(args []string, stdout, stderr io.Writer) (string, error) {
	fs := newFlagSet("pack", stderr)
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		return "", parseFlags(fs, args, stdout)
	}
	if fs.NArg() != 1 {
		return "", usageErr("pack: want exactly one run directory, got %d arguments", fs.NArg())
	}
	dir := fs.Arg(0)
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return "", usageErr("pack: %q is not a run directory", dir)
	}
	return dir, nil
}
