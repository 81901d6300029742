package results

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// The entries of a run directory (the README's "A run directory"). At the top: what a person
// opens first and the small data files; below, one directory of interval
// logs and one of charts, so that the top stays readable however many runs
// there are.
const (
	// ReportFile is what a person reads first (WriteReport).
	ReportFile = "report.md"
	// ReportHTMLFile is the same as one self-contained page with
	// interactive charts (WriteHTML).
	ReportHTMLFile = "report.html"
	// SummaryJSONFile is every run's Summary, a JSON array.
	SummaryJSONFile = "summary.json"
	// SummaryCSVFile is the same, one row per run (WriteCSV).
	SummaryCSVFile = "summary.csv"
	// VerdictsFile is the Summary of every verdict run (VerdictRuns),
	// written only when a fault ran. (AggregateFile, aggregate.json, is
	// written when trials ran.)
	VerdictsFile = "verdicts.json"
	// BenchFile is the Go benchmark format, for benchstat (WriteBench).
	BenchFile = "bench.txt"
	// MetaFile is the directory's Meta.
	MetaFile = "meta.json"
	// HlogDir holds an HdrHistogram interval log per run and phase
	// (HlogName, WriteHlog).
	HlogDir = "hlog"
	// ChartsDir holds every chart as <Chart.Name>.png and .svg.
	ChartsDir = "charts"
)

// Layout is where a run directory keeps its interval logs and its charts:
// directories relative to its top, "" being the top itself. WriteData and
// RenderRuns write Layout{HlogDir, ChartsDir}; the zero Layout is that of
// the flat directories lockbench wrote before hlog/ and charts/ existed
// (results/reference among them), which LoadDir and Render still read.
type Layout struct {
	Hlog, Charts string
}

// standardLayout is the layout of every directory lockbench writes.
var standardLayout = Layout{Hlog: HlogDir, Charts: ChartsDir}

// LayoutOf returns the layout of the run directory dir: the flat one when
// dir has interval logs at its top and no hlog/ directory, the standard
// one otherwise. Render draws a flat directory's charts next to its
// report.md, where the links of its old report and of anything else that
// points into it (the README's, for results/reference) expect them.
func LayoutOf(dir string) Layout {
	if _, err := os.Stat(filepath.Join(dir, HlogDir)); err == nil {
		return standardLayout
	}
	if old, _ := filepath.Glob(filepath.Join(dir, "*.hlog")); len(old) > 0 {
		return Layout{}
	}
	return standardLayout
}

// hlogPath is the path of the interval log of phase p of the run with file
// id id, in the run directory dir.
func (l Layout) hlogPath(dir, id string, p Phase) string {
	return filepath.Join(dir, l.Hlog, HlogName(id, p))
}

// chartPath is the path of a chart file (name and extension) in dir.
func (l Layout) chartPath(dir, file string) string {
	return filepath.Join(dir, l.Charts, file)
}

// WriteDir writes a whole run directory at once: WriteData, then
// RenderRuns. A command that adds runs one by one calls WriteData after
// each and RenderRuns once at the end instead.
func WriteDir(dir string, runs []Run, meta Meta) error {
	if err := WriteData(dir, runs, meta); err != nil {
		return err
	}
	return RenderRuns(dir, runs, meta)
}

// WriteData writes the data files of the run directory dir (created if
// needed) for runs: an interval log per run and phase in hlog/, then
// summary.json, summary.csv, bench.txt, verdicts.json when faults ran,
// aggregate.json when a cell ran more than one trial, and meta.json. It
// draws nothing: charts and report.md are RenderRuns'.
//
// Every file is written atomically (temporary file in its directory, then
// rename). Call it after each run with all the runs so far, so that an
// interrupted command leaves every finished run on disk; the interval logs
// of runs already written are not re-encoded, so each call costs little
// more than the new run's logs.
func WriteData(dir string, runs []Run, meta Meta) error {
	return writeData(dir, runs, meta, standardLayout)
}

func writeData(dir string, runs []Run, meta Meta, l Layout) error {
	if err := os.MkdirAll(filepath.Join(dir, l.Hlog), 0o755); err != nil {
		return fmt.Errorf("results: %w", err)
	}
	runs = normalizedRuns(runs)
	ss := summariesOf(runs)
	ids := FileIDs(ss)
	for i, r := range runs {
		for p := Phase(0); p < NumPhases; p++ {
			path := l.hlogPath(dir, ids[i], p)
			fp, write := hlogFingerprint(r, p), func(w io.Writer) error { return WriteHlog(w, r, p) }
			if r.Log != nil {
				fp, write = r.Log.Fingerprint(r, p), func(w io.Writer) error { return r.Log.WriteHlog(w, r, p) }
			}
			if hasFingerprint(path, fp) {
				continue // written by an earlier call, unchanged
			}
			err := writeFileAtomic(path, write)
			if err != nil {
				return err
			}
		}
	}
	files := []struct {
		name  string
		write func(io.Writer) error
	}{
		{SummaryJSONFile, func(w io.Writer) error { return WriteJSON(w, ss) }},
		{SummaryCSVFile, func(w io.Writer) error { return WriteCSV(w, ss) }},
		{BenchFile, func(w io.Writer) error { return WriteBench(w, ss, meta.Host) }},
		{MetaFile, func(w io.Writer) error { return writeMeta(w, meta) }},
	}
	type file = struct {
		name  string
		write func(io.Writer) error
	}
	if v := VerdictRuns(ss); len(v) > 0 {
		files = append(files, file{VerdictsFile, func(w io.Writer) error { return WriteJSON(w, v) }})
	}
	if MaxTrials(ss) > 1 {
		files = append(files, file{AggregateFile, func(w io.Writer) error { return WriteAggregate(w, Aggregate(ss)) }})
	}
	for _, f := range files {
		if err := writeFileAtomic(filepath.Join(dir, f.name), f.write); err != nil {
			return err
		}
	}
	return nil
}

// RenderRuns draws the charts of runs into dir's charts/ (PNG and SVG) and
// writes report.md and report.html, from the runs in memory: those
// WriteData wrote.
// Drawing is the costly part of a run directory and only the whole set of
// runs is worth drawing, so a command calls it once, when it ends,
// interrupted or not. A chart that fails to draw is left out (and named in
// report.md) and its error returned after everything else was written.
func RenderRuns(dir string, runs []Run, meta Meta) error {
	return renderFiles(context.Background(), dir, normalizedRuns(runs), meta, standardLayout)
}

// normalizedRuns is a copy of runs with normalised summaries, so the files
// written now and those Render reads back later describe the very same
// summaries.
func normalizedRuns(runs []Run) []Run {
	runs = append([]Run(nil), runs...)
	for i := range runs {
		runs[i].Summary = normalized(runs[i].Summary)
	}
	return runs
}

// renderFiles draws the charts into l.Charts and writes report.md and
// report.html. Once ctx is done it writes nothing more and returns its
// error: every file already written is whole, the rest keep their old
// content.
func renderFiles(ctx context.Context, dir string, runs []Run, meta Meta, l Layout) error {
	cs, buildErr := BuildCharts(runs)
	errs := []error{buildErr}
	if len(cs.Charts) > 0 {
		if err := os.MkdirAll(filepath.Join(dir, l.Charts), 0o755); err != nil {
			return fmt.Errorf("results: %w", err)
		}
	}
	drawn := cs.Charts[:0:0]
	for _, ch := range cs.Charts {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		err := writeFileAtomic(l.chartPath(dir, ch.Name+".png"), ch.WritePNG)
		if err == nil {
			err = writeFileAtomic(l.chartPath(dir, ch.Name+".svg"), ch.WriteSVG)
		}
		if err != nil {
			errs = append(errs, err)
			cs.Missing = append(cs.Missing, fmt.Sprintf("%s: could not be written (%v).", ch.Title, err))
			continue
		}
		drawn = append(drawn, ch)
	}
	cs.Charts = drawn
	if ctx.Err() != nil {
		return ctx.Err()
	}
	ss := summariesOf(runs)
	err := writeFileAtomic(filepath.Join(dir, ReportFile), func(w io.Writer) error {
		return WriteReport(w, ss, meta, cs, l)
	})
	htmlErr := writeFileAtomic(filepath.Join(dir, ReportHTMLFile), func(w io.Writer) error {
		return WriteHTML(w, runs, meta, cs, l)
	})
	return errors.Join(append(errs, err, htmlErr)...)
}

// WriteMeta rewrites the meta.json of the run directory dir alone, as a
// command does when it ends (with the load average after).
func WriteMeta(dir string, meta Meta) error {
	return writeFileAtomic(filepath.Join(dir, MetaFile), func(w io.Writer) error { return writeMeta(w, meta) })
}

func writeMeta(w io.Writer, meta Meta) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(meta); err != nil {
		return fmt.Errorf("results: encoding meta: %w", err)
	}
	return nil
}

// LoadDir reads a run directory written by WriteData back: the summaries
// from summary.json, the histograms from the interval logs in hlog/ (or at
// the top of an old flat directory, see LayoutOf; Total is the merge of a
// run's intervals), and meta.json (zero Meta when missing). A missing
// interval log leaves that phase empty. Interval times come back
// to the millisecond; a run written without intervals comes back without
// them (its log holds one WholeRunTag histogram). Memory: every interval of every phase is held, about
// a quarter of a megabyte per histogram.
func LoadDir(dir string) ([]Run, Meta, error) {
	meta, ss, err := readDirData(dir)
	if err != nil {
		return nil, Meta{}, err
	}
	runs, err := loadRuns(context.Background(), dir, LayoutOf(dir), ss, func(*Summary, Phase) (bool, bool) { return true, true })
	if err != nil {
		return nil, Meta{}, err
	}
	for i := range runs {
		fillEmpty(&runs[i])
	}
	return runs, meta, nil
}

// Render re-draws the charts, report.md and report.html of a run directory from its data
// files alone (summary.json, meta.json, the interval logs): `lockbench
// report DIR`. It reads only the histograms the charts need, and keeps the
// directory's layout (LayoutOf): an old flat directory gets its charts
// redrawn at its top.
//
// Once ctx is done it stops (between two files, every file it wrote
// whole) and returns ctx's error.
func Render(ctx context.Context, dir string) error {
	meta, ss, err := readDirData(dir)
	if err != nil {
		return err
	}
	l := LayoutOf(dir)
	runs, err := loadRuns(ctx, dir, l, ss, func(s *Summary, p Phase) (load, intervals bool) {
		switch p {
		case Acquire:
			return true, false
		case Total:
			return true, s.HasFault()
		}
		return false, false
	})
	if err != nil {
		return err
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return renderFiles(ctx, dir, runs, meta, l)
}

func readDirData(dir string) (Meta, []Summary, error) {
	var meta Meta
	if data, err := os.ReadFile(filepath.Join(dir, MetaFile)); err == nil {
		if err := json.Unmarshal(data, &meta); err != nil {
			return Meta{}, nil, fmt.Errorf("results: %s: %w", MetaFile, err)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return Meta{}, nil, fmt.Errorf("results: %w", err)
	}
	f, err := os.Open(filepath.Join(dir, SummaryJSONFile))
	if err != nil {
		return Meta{}, nil, fmt.Errorf("results: %w", err)
	}
	defer f.Close()
	ss, err := ReadJSON(f)
	if err != nil {
		return Meta{}, nil, fmt.Errorf("results: %s: %w", SummaryJSONFile, err)
	}
	return meta, ss, nil
}

// loadRuns reads the interval logs of ss. want says, per run and phase,
// whether to read the log at all and whether to keep its intervals (else
// only their merge, Total, is kept). It stops with ctx's error once ctx is
// done.
func loadRuns(ctx context.Context, dir string, l Layout, ss []Summary, want func(s *Summary, p Phase) (load, intervals bool)) ([]Run, error) {
	ids := FileIDs(ss)
	runs := make([]Run, len(ss))
	for i := range ss {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		r := &runs[i]
		r.Summary = ss[i]
		for p := Phase(0); p < NumPhases; p++ {
			load, keep := want(&r.Summary, p)
			if !load {
				continue
			}
			ivs, err := readHlogFile(l.hlogPath(dir, ids[i], p), p)
			if err != nil {
				return nil, err
			}
			if ivs == nil {
				continue
			}
			if len(ivs) == 1 && ivs[0].Hists[p].Tag() == WholeRunTag {
				keep = false // not a time series
			}
			total := NewHistogram()
			for j, iv := range ivs {
				total.Merge(iv.Hists[p])
				if !keep {
					continue
				}
				if j == len(r.Intervals) {
					r.Intervals = append(r.Intervals, Interval{StartNs: iv.StartNs, EndNs: iv.EndNs})
				}
				if j < len(r.Intervals) {
					r.Intervals[j].Hists[p] = iv.Hists[p]
				}
			}
			r.Total[p] = total
		}
	}
	return runs, nil
}

// readHlogFile reads one interval log; a missing file is no intervals.
func readHlogFile(path string, p Phase) ([]Interval, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("results: %w", err)
	}
	defer f.Close()
	ivs, err := ReadHlog(f, p)
	if err != nil {
		return nil, fmt.Errorf("results: %s: %w", path, err)
	}
	return ivs, nil
}

// fillEmpty gives every phase of r a histogram, empty where nothing was
// read, so callers of LoadDir need no nil checks.
func fillEmpty(r *Run) {
	for p := range r.Total {
		if r.Total[p] == nil {
			r.Total[p] = NewHistogram()
		}
	}
	for i := range r.Intervals {
		for p := range r.Intervals[i].Hists {
			if r.Intervals[i].Hists[p] == nil {
				r.Intervals[i].Hists[p] = NewHistogram()
			}
		}
	}
}
