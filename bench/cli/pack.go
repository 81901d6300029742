package cli

import (
	"context"
	"fmt"
	"io"
	"path/filepath"

	"github.com/lockbench/lockbench/report"
	"github.com/lockbench/lockbench/results"
)

// runPack is `lockbench pack DIR`: pack a finished run directory for
// publishing (results.Pack). Its data go into one archive, whose SHA-256
// meta.json records; meta.json, report.md, report.html and the PNG charts
// stay beside it, redrawn from the archive (report.Render), which proves
// it reads back. `lockbench report` and `lockbench compare` read the
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
	// Redrawn from the archive, as report and compare read it: the
	// reports link the charts that stay beside it.
	if err := report.Render(ctx, dir); err != nil {
		return err
	}
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
	return parseRunDirArg("pack", args, stdout, stderr)
}
