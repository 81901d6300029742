package cli

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/lockbench/lockbench/report"
	"github.com/lockbench/lockbench/results"
	"github.com/lockbench/lockbench/servers"
)

// runDir accumulates a command's runs in its run directory: every run's
// data files as soon as it finishes (add), so an interrupted command still
// leaves them, and the charts and report.md once, when the command ends
// (close). Drawing them after every run made a matrix quadratic.
type runDir struct {
	dir  string
	runs []results.Run
	meta results.Meta
	// started is the machine's CPU time when the command began, for
	// meta.json's steal_percent.
	started results.MachineTime
	closed  bool
	// resumed is set for a directory reopened by --resume (resumeRunDir);
	// startedServers are then the servers its first part ran on, and
	// match finds the runs it held.
	resumed        bool
	startedServers map[string]string
	match          *resumeMatch
}

// newRunDir makes the run directory out (a dated one under out/ when ""),
// after checking that its file system has room for need bytes
// (outEstimate): too little is a usage error naming --out.
func newRunDir(out, kind string, args []string, need int64) (*runDir, error) {
	if out == "" {
		out = filepath.Join("out", kind+"-"+time.Now().Format("20060102-150405"))
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, fmt.Errorf("--out: %w", err)
	}
	if free, ok := freeBytes(out); ok && free < need {
		return nil, usageErr("--out: %s has %s free; this command writes up to about %s there (charts, reports, interval logs%s): free some space or choose another --out",
			out, fmtBytes(free), fmtBytes(need), map[bool]string{true: ", histories"}[need > outFixed+outPerRun*1000])
	}
	return &runDir{dir: out, started: results.ReadMachineTime(), meta: results.Meta{
		SchemaVersion: results.MetaSchemaVersion,
		Title:         "lockbench " + kind,
		Command:       servers.Redact("lockbench " + kind + " " + strings.Join(args, " ")),
		Date:          time.Now().UTC().Truncate(time.Second),
		Host:          results.CurrentHost(),
		Build:         results.CurrentBuild(),
		LoadBefore:    results.CurrentLoad(),
	}}, nil
}

// describe records in meta.json how the runs are made: the trials per
// cell, the first trial's seed and the versions of the servers the
// session started; and tells sess where its runs' files go (their
// histories too, when history is set).
func (d *runDir) describe(ctx context.Context, sess *session, trials int, seed int64, history bool) {
	d.meta.Trials, d.meta.Seed = trials, seed
	sess.trials = trials
	sess.streamDir = filepath.Join(d.dir, results.HlogDir)
	sess.runDir = d.dir
	if history {
		sess.historyDir = filepath.Join(d.dir, results.HistoryDir)
	}
	if v := sess.cluster.Versions(ctx); len(v) > 0 {
		d.meta.Servers = v
	}
}

// add records r and writes the data files of every run so far. Once they
// are written, every run keeps only its summary (results.Run.OnDisk): its
// histograms are on disk, and the report is drawn from there, so a long
// command's memory does not grow with the runs it has finished.
func (d *runDir) add(r results.Run) error {
	d.runs = append(d.runs, r)
	if err := results.WriteData(d.dir, d.runs, d.meta); err != nil {
		return err
	}
	var err error
	for i, r := range d.runs {
		if r.OnDisk {
			continue
		}
		if r.Log != nil {
			err = errors.Join(err, r.Log.Close())
		}
		d.runs[i] = results.Run{Summary: r.Summary, OnDisk: true}
	}
	return err
}

// close draws the charts and writes report.md and report.html from every
// run added, the first time it is called; later calls do nothing and
// return nil, and so does a first call before any run was added (there is
// nothing to draw, and no data for `lockbench report` to redraw it from). A
// command defers closeAtExit, so that an error or an interrupt still
// leaves a report of the runs that finished, and calls close itself
// before its last lines of output, so the report exists when they name it.
func (d *runDir) close() error {
	if d.closed {
		return nil
	}
	d.closed = true
	if len(d.runs) == 0 {
		// A command that failed before its first run leaves no empty
		// directory behind (os.Remove removes only an empty one).
		_ = os.Remove(d.dir)
		return nil
	}
	if d.resumed {
		d.meta.Resumptions[len(d.meta.Resumptions)-1].LoadAfter = results.CurrentLoad()
	} else {
		d.meta.LoadAfter = results.CurrentLoad()
	}
	if p := results.StealPercent(d.started, results.ReadMachineTime()); !math.IsNaN(p) {
		d.meta.StealPercent = &p
	}
	// The runs added are on disk (add): the report is drawn from the data
	// files, as `lockbench report` draws it. A run whose files could not
	// be written still holds its interval stream, closed here.
	err := results.WriteMeta(d.dir, d.meta)
	err = errors.Join(err, report.Render(context.Background(), d.dir))
	for _, r := range d.runs {
		if r.Log != nil {
			err = errors.Join(err, r.Log.Close())
		}
	}
	return err
}

// windowRates are the lock cycles per second of each run before, during
// and after its fault window (windowRates; NaNs for a run without one),
// read back from the run directory one run at a time.
func (d *runDir) windowRates(ctx context.Context) ([][3]float64, error) {
	fsys, err := results.OpenDir(d.dir)
	if err != nil {
		return nil, err
	}
	l := results.LayoutOfFS(fsys)
	ss := d.summaries()
	out := make([][3]float64, len(ss))
	for i := range ss {
		out[i] = [3]float64{math.NaN(), math.NaN(), math.NaN()}
		if ss[i].FaultWindow == nil {
			continue
		}
		id := ss[i].ID() // those of another run only if it repeats this one's
		runs, err := results.LoadRuns(ctx, fsys, l, ss, func(s *results.Summary, p results.Phase) (load, intervals bool) {
			on := p == results.Critical && s.ID() == id
			return on, on
		})
		if err != nil {
			return nil, err
		}
		out[i] = windowRates(runs[i])
	}
	return out, nil
}

// closeAtExit is close for a command's defer: its error, if any, is
// joined to the command's *err.
func (d *runDir) closeAtExit(err *error) {
	if cerr := d.close(); cerr != nil {
		*err = errors.Join(*err, cerr)
	}
}

func (d *runDir) summaries() []results.Summary {
	out := make([]results.Summary, len(d.runs))
	for i, r := range d.runs {
		out[i] = r.Summary
	}
	return out
}

// What a command writes into its run directory, at most, for the check
// newRunDir makes before it starts (measured on runs of 3,000 payments:
// 100 KB of charts and 90 KB of report.html for two runs, 10 KB of interval
// logs and rows a run, and a history of 160 B a payment compressed, about
// 1 KB while it is written).
const (
	outFixed              = 4 << 20  // charts, report.md, report.html
	outPerRun             = 64 << 10 // interval logs, summary rows
	historyPerPayment     = 256      // a history, compressed
	historyPartPerPayment = 1536     // the history being written, plain
)

// outEstimate is what a command of runs runs of at most payments payments
// each (0: unknown, taken as 10,000) writes into --out, with their
// histories when history is set: a generous upper bound, so that a run
// that starts has room to finish.
func outEstimate(runs, payments int, history bool) int64 {
	need := int64(outFixed) + int64(runs)*outPerRun
	if history {
		if payments <= 0 {
			payments = 10000
		}
		need += int64(runs)*int64(payments)*historyPerPayment + int64(payments)*historyPartPerPayment
	}
	return need
}

// fmtBytes is n in KB, MB or GB (powers of 1024), for people.
func fmtBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%d KB", n>>10)
}
