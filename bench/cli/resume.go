// Resuming an interrupted verdicts or matrix (--resume DIR): the run
// directory's finished runs are kept as they are, and only the runs it
// does not hold yet are run.

package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/lockbench/lockbench/results"
)

// resumeRunDir reopens dir, the run directory of an interrupted command
// of kind, for --resume: its finished runs (the rows of summary.json; a run
// cut short wrote none) are kept, byte for byte, and the command line args
// must be the one that made it, as must the lockbench build, unless force
// is set (then args become the directory's command line). An empty
// directory, or one the command was killed in before its first run, is
// started afresh.
func resumeRunDir(dir, kind string, args []string, force bool) (*runDir, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, usageErr("--resume: %s: no such run directory", dir)
	}
	if !st.IsDir() {
		return nil, usageErr("--resume: %s is not a directory", dir)
	}
	d, err := newRunDir(dir, kind, args, 0)
	if err != nil {
		return nil, err
	}
	meta, ss, err := results.ReadDirData(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist) && meta.Command == "":
		// Killed before its first run was written: nothing to keep, unless
		// the directory holds something else.
		if entries, _ := os.ReadDir(dir); len(nonScratch(entries)) > 0 {
			return nil, usageErr("--resume: %s holds no lockbench run (no %s)", dir, results.SummaryJSONFile)
		}
		return d, nil
	case err != nil:
		return nil, fmt.Errorf("--resume: %s: %w", dir, err)
	}
	if meta.Archive != nil {
		return nil, usageErr("--resume: %s is packed; a packed run directory is finished", dir)
	}
	was, now := resumeCommand(meta.Command), resumeCommand(d.meta.Command)
	if was != now && !force {
		return nil, usageErr("--resume: %s was made by `%s`, not `%s`: run that command line with --resume, or add --force to continue it with this one", dir, was, now)
	}
	if b := results.CurrentBuild(); meta.Build.Version != b.Version || meta.Build.Commit != b.Commit {
		return nil, usageErr("--resume: %s was made by lockbench %s, this is %s: resume it with that build", dir, buildName(meta.Build), buildName(b))
	}
	if kindOf(meta.Command) != kind {
		return nil, usageErr("--resume: %s was made by `%s`, not by lockbench %s", dir, meta.Command, kind)
	}
	r := results.Resumption{Date: time.Now().UTC().Truncate(time.Second), RunsBefore: len(ss), Forced: was != now, LoadBefore: results.CurrentLoad()}
	if r.Forced {
		meta.Command = d.meta.Command
	}
	meta.Resumptions = append(meta.Resumptions, r)
	d.startedServers = meta.Servers
	d.meta = meta
	d.resumed = true
	removeScratch(dir)
	for _, s := range ss {
		d.runs = append(d.runs, results.Run{Summary: s, OnDisk: true})
	}
	d.match = &resumeMatch{runs: ss, matched: make([]bool, len(ss))}
	return d, nil
}

// nonScratch drops the files a command leaves before its first run is
// written (the interval logs' folder, a history being written).
func nonScratch(entries []os.DirEntry) []os.DirEntry {
	var out []os.DirEntry
	for _, e := range entries {
		if e.Name() != results.HlogDir && e.Name() != results.HistoryDir {
			out = append(out, e)
		}
	}
	return out
}

// resumeCommand is a command line as --resume compares it: without where
// its directory is (--out, --resume) and --force, which may differ between
// the first part and the next.
func resumeCommand(cmd string) string {
	f := strings.Fields(cmd)
	var keep []string
	for i := 0; i < len(f); i++ {
		name, _, hasValue := strings.Cut(strings.TrimLeft(f[i], "-"), "=")
		if !strings.HasPrefix(f[i], "-") {
			keep = append(keep, f[i])
			continue
		}
		switch name {
		case "out", "resume":
			if !hasValue {
				i++ // its value
			}
		case "force":
		default:
			keep = append(keep, f[i])
		}
	}
	return strings.Join(keep, " ")
}

// kindOf is the command of a command line ("verdicts" of "lockbench
// verdicts …").
func kindOf(cmd string) string {
	f := strings.Fields(cmd)
	if len(f) < 2 {
		return ""
	}
	return f[1]
}

func buildName(b results.Build) string {
	name := b.Version
	if name == "" {
		name = "(unknown version)"
	}
	if b.Commit != "" {
		name += " " + b.Commit[:min(12, len(b.Commit))]
	}
	return name
}

// checkServers refuses to resume on servers of other kinds or versions
// than those the directory's first part ran on (their ports may differ).
func (d *runDir) checkServers(ctx context.Context, sess *session) error {
	if !d.resumed || len(d.runs) == 0 {
		return nil
	}
	was, now := d.startedServers, sess.cluster.Versions(ctx)
	if len(was) == 0 && len(now) == 0 {
		return nil
	}
	if diff := versionsDiff(was, now); diff != "" {
		d.closed = true // the directory stays as it was
		return usageErr("--resume: %s ran on other servers (%s): resume it where it ran", d.dir, diff)
	}
	return nil
}

// versionsDiff names the servers whose kind or version differ between was
// and now; "" when none does.
func versionsDiff(was, now map[string]string) string {
	kinds := map[string]bool{}
	for k := range was {
		kinds[k] = true
	}
	for k := range now {
		kinds[k] = true
	}
	var diff []string
	for k := range kinds {
		w, n := was[k], now[k]
		switch {
		case w == n:
		case w == "":
			diff = append(diff, fmt.Sprintf("%s %s now, none before", k, n))
		case n == "":
			diff = append(diff, fmt.Sprintf("%s %s before, none now", k, w))
		default:
			diff = append(diff, fmt.Sprintf("%s %s before, %s now", k, w, n))
		}
	}
	sort.Strings(diff)
	return strings.Join(diff, "; ")
}

// resumeMatch finds, among the runs a resumed directory holds, the one
// that is trial trial of the cell (strategy under params, WAIT wait):
// the runs are matched by what they ran, never by their place, so lanes
// that finished runs in any order resume alike. Each run is matched
// once; matched says which were. A nil *resumeMatch (a command not
// resumed) holds none.
type resumeMatch struct {
	runs    []results.Summary
	matched []bool
}

// done reports whether the directory holds the run, marks it matched and
// returns its summary.
func (m *resumeMatch) done(strategy string, trial int, p results.Params, variant string, wait int) (results.Summary, bool) {
	if m == nil {
		return results.Summary{}, false
	}
	for i, s := range m.runs {
		if m.matched[i] || s.Strategy != strategy || s.Trial != trial || !sameParams(s.Params, p) ||
			!strings.HasPrefix(s.Variant, variant) || variantWait(s.Variant) != wait {
			continue
		}
		m.matched[i] = true
		return s, true
	}
	return results.Summary{}, false
}

// unmatched are the runs no cell of the command line names.
func (m *resumeMatch) unmatched() []int {
	if m == nil {
		return nil
	}
	var out []int
	for i, ok := range m.matched {
		if !ok {
			out = append(out, i)
		}
	}
	return out
}

// sameParams compares the scenarios two runs were given: the store's
// transport is what the run chose, not what it was given.
func sameParams(a, b results.Params) bool {
	a.StoreTransport, b.StoreTransport = "", ""
	return a == b
}

// variantWait is the WAIT of a run's variant ("wait=1"), 0 without.
func variantWait(v string) int {
	for _, p := range strings.Split(v, ",") {
		var n int
		if _, err := fmt.Sscanf(p, "wait=%d", &n); err == nil {
			return n
		}
	}
	return 0
}

// drop removes the runs at idx (ascending) from d, for --force: rows of
// cells the new command line does not name.
func (d *runDir) drop(idx []int) {
	if len(idx) == 0 {
		return
	}
	keep := d.runs[:0]
	j := 0
	for i, r := range d.runs {
		if j < len(idx) && idx[j] == i {
			j++
			continue
		}
		keep = append(keep, r)
	}
	d.runs = keep
	d.meta.Resumptions[len(d.meta.Resumptions)-1].Dropped = len(idx)
}

// finishResume drops the runs of a resumed d that no cell of the command
// line matched, with --force (rows of cells it does not name), and says
// so; without --force the command line is the directory's, and such runs
// (none are expected) are kept.
func (d *runDir) finishResume(stderr io.Writer) error {
	if !d.resumed {
		return nil
	}
	extra := d.match.unmatched()
	if len(extra) == 0 {
		return nil
	}
	if !d.meta.Resumptions[len(d.meta.Resumptions)-1].Forced {
		fmt.Fprintf(stderr, "resume: kept %d runs of %s that no cell of this command line made\n", len(extra), d.dir)
		return nil
	}
	d.drop(extra)
	d.match = nil
	if err := results.WriteData(d.dir, d.runs, d.meta); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "resume: dropped %d runs of cells this command line does not name from %s\n", len(extra), results.SummaryJSONFile)
	return nil
}

// openCellDir is the run directory of verdicts or matrix: a new one, or
// with --resume the interrupted one, reopened.
func openCellDir(o cellOptions, kind string, args []string, need int64) (*runDir, error) {
	if o.resume != "" {
		return resumeRunDir(o.resume, kind, args, o.force)
	}
	return newRunDir(o.out, kind, args, need)
}

// removeScratch removes what a killed command left half-written in its
// run directory: atomic writes that never got renamed into place
// (".NAME.tmp-…") and the interval logs and histories of the run it was
// in (".part"). None of them is a finished run's.
func removeScratch(dir string) {
	_ = filepath.WalkDir(dir, func(path string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return nil
		}
		if name := e.Name(); strings.HasSuffix(name, ".part") || (strings.HasPrefix(name, ".") && strings.Contains(name, ".tmp-")) {
			_ = os.Remove(path)
		}
		return nil
	})
}
