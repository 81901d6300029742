package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/lockbench/lockbench/results"
	"github.com/lockbench/lockbench/servers"
)

// runDir accumulates runs and rewrites the run directory after each one, so
// an interrupted command still leaves a readable partial directory.
type runDir struct {
	dir  string
	runs []results.Run
	meta results.Meta
}

func newRunDir(out, kind string, args []string) (*runDir, error) {
	if out == "" {
		out = filepath.Join("out", kind+"-"+time.Now().Format("20060102-150405"))
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, fmt.Errorf("--out: %w", err)
	}
	return &runDir{dir: out, meta: results.Meta{
		Title:   "lockbench " + kind,
		Command: servers.Redact("lockbench " + kind + " " + strings.Join(args, " ")),
		Date:    time.Now().UTC().Truncate(time.Second),
		Host:    results.CurrentHost(),
	}}, nil
}

func (d *runDir) add(r results.Run) error {
	d.runs = append(d.runs, r)
	return results.WriteDir(d.dir, d.runs, d.meta)
}

func (d *runDir) summaries() []results.Summary {
	out := make([]results.Summary, len(d.runs))
	for i, r := range d.runs {
		out[i] = r.Summary
	}
	return out
}
