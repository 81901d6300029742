package check

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// ErrNoHistory is Dir's refusal of a run directory that holds no
// history: its runs were not recorded.
var ErrNoHistory = errors.New("check: no history")

// ErrUnreadable is Dir's error when a history could not be judged (it
// does not open, or breaks the format); the other runs are checked and
// reported all the same.
var ErrUnreadable = errors.New("check: unreadable history")

// Dir checks every run of the run directory dir (each row of its
// summary.json and verdicts.json, each run once) that has a history
// (HistoryPath), and writes one line per run to out, as "Output" in the
// package doc shows. It returns ErrNoHistory when dir holds no history,
// and an error that wraps ErrUnreadable, with the report, when some
// history could not be judged. Disagreements are no error: see
// Report.Disagreements.
func Dir(ctx context.Context, dir string, opt Options, out io.Writer) (Report, error) {
	opt = opt.withDefaults()
	runs, err := readRows(dir)
	if err != nil {
		return Report{}, err
	}
	if found, err := filepath.Glob(filepath.Join(dir, HistoryDir, "*"+HistoryExt)); err != nil || len(found) == 0 {
		return Report{}, fmt.Errorf("%w in %s: run with --history", ErrNoHistory, dir)
	}
	var rep Report
	unreadable := 0
	for _, rr := range runs {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		rr := checkRun(ctx, dir, rr, &opt)
		if rr.Err != nil {
			unreadable++
		}
		rep.Runs = append(rep.Runs, rr)
		if err := printRun(out, &rr); err != nil {
			return rep, fmt.Errorf("check: %w", err)
		}
	}
	if err := ctx.Err(); err != nil {
		return rep, err
	}
	if unreadable > 0 {
		return rep, fmt.Errorf("%w: %s", ErrUnreadable, plural(unreadable, "run"))
	}
	return rep, nil
}

// checkRun checks the run rr of the run directory dir.
func checkRun(ctx context.Context, dir string, rr runRows, opt *Options) RunReport {
	r := RunReport{ID: rr.id}
	path := HistoryPath(dir, rr.id)
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return r
	}
	r.History = path
	h, err := readHistory(path)
	if err != nil {
		r.Err = err
		return r
	}
	d, err := derive(h)
	if err != nil {
		r.Err = fmt.Errorf("%s: %w", path, err)
		return r
	}
	r.Counts = d.counts
	r.Derived = judgementOf(d, rr.rows)
	for _, rw := range rr.rows {
		j := rw.judged
		r.Rows = append(r.Rows, RowFigures{File: rw.file, Counts: rw.counts, Verdict: j.Verdict, Unsafe: j.Unsafe, Availability: j.Availability, Errors: j.Errors})
	}
	r.Disagreements, r.Notes = compare(&d.counts, d.hi, rr.rows, d.underived)
	r.Disagreements = append(r.Disagreements, compareJudgement(d, &r.Derived, rr.rows)...)
	for _, v := range consistency(h) {
		r.Disagreements = append(r.Disagreements, Disagreement{Field: FieldHistory, Text: v})
	}
	for _, w := range d.writes {
		r.Disagreements = append(r.Disagreements, Disagreement{Field: FieldApplied, Write: w})
	}
	ex, draw := checkExclusion(ctx, h, d.overlapKeys, opt)
	notes, dis := exclusionNotes(&ex)
	r.Disagreements = append(r.Disagreements, dis...)
	r.Notes = append(r.Notes, notes...)
	for j := range draw {
		kc := &draw[j]
		vp := VisualPath(dir, rr.id, kc.Key)
		if err := writeVisual(vp, kc, h.keys[kc.Key].events); err != nil {
			r.Notes = append(r.Notes, fmt.Sprintf("exclusion: %s not written: %v", vp, err))
			continue
		}
		ex.Files = append(ex.Files, vp)
		r.Notes = append(r.Notes, "exclusion: wrote "+vp)
	}
	r.Exclusion = ex
	r.Notes = append(r.Notes, d.notes...)
	return r
}

// compare compares the derived counts c with each row of the run, and
// notes the counts a row lacks (a file written before the count existed).
// With hi (transactions of unknown outcome), a row's count agrees when it
// lies between c's and hi's.
func compare(c, hi *Counts, rows []row, underived map[string]bool) ([]Disagreement, []string) {
	var dis []Disagreement
	var notes []string
	var his []field
	if hi != nil {
		his = hi.fields()
	}
	for _, rw := range rows {
		var missing []string
		for i, f := range c.fields() {
			if underived[f.name] {
				continue
			}
			v, ok := rw.counts[f.name]
			lo, up := f.value, f.value
			if his != nil {
				lo, up = min(f.value, his[i].value), max(f.value, his[i].value)
			}
			switch {
			case !ok:
				missing = append(missing, f.name)
			case v < lo || v > up:
				dis = append(dis, Disagreement{Field: f.name, File: rw.file, History: f.value, Row: v})
			}
		}
		if len(missing) > 0 {
			notes = append(notes, fmt.Sprintf("not in %s, not compared: %s", rw.file, strings.Join(missing, ", ")))
		}
	}
	for name := range underived {
		notes = append(notes, name+": not derived from this kind of history, not compared (docs/history.md)")
	}
	return dis, notes
}
