package results

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
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
	// HistoryDir holds the runs' histories (docs/history.md), one file
	// per run: <run id> + HistoryExt.
	HistoryDir = "history"
	// HistoryExt ends a history's file name: zstd-compressed JSON lines.
	HistoryExt = ".jsonl.zst"
	// ChartsDir holds every chart as <Chart.Name>.png and .svg.
	ChartsDir = "charts"
)

// Layout is where a run directory keeps its interval logs and its charts:
// directories relative to its top, "" being the top itself. WriteData and
// RenderRuns write Layout{HlogDir, ChartsDir}; the zero Layout is that of
// the flat directories lockbench wrote before hlog/ and charts/ existed,
// which LoadDir and Render still read.
type Layout struct {
	Hlog, Charts string
}

// StandardLayout is the layout of every directory lockbench writes.
var StandardLayout = Layout{Hlog: HlogDir, Charts: ChartsDir}

// LayoutOf returns the layout of the run directory dir, packed or not
// (LayoutOfFS of OpenDir's view; of the directory alone when its archive
// does not open, an error its reader will meet).
func LayoutOf(dir string) Layout {
	fsys, err := OpenDir(dir)
	if err != nil {
		fsys = os.DirFS(dir)
	}
	return LayoutOfFS(fsys)
}

// LayoutOfFS returns the layout of the run directory fsys: the flat one
// when it has interval logs at its top and no hlog/ directory, the
// standard one otherwise. Render draws a flat directory's charts next to
// its report.md, where the links of its old report and of anything else
// that points into it expect them.
func LayoutOfFS(fsys fs.FS) Layout {
	if _, err := fs.Stat(fsys, HlogDir); err == nil {
		return StandardLayout
	}
	if old, _ := fs.Glob(fsys, "*.hlog"); len(old) > 0 {
		return Layout{}
	}
	return StandardLayout
}

// hlogPath is the path of the interval log of phase p of the run with file
// id id, in the run directory dir.
func (l Layout) hlogPath(dir, id string, p Phase) string {
	return filepath.Join(dir, l.Hlog, HlogName(id, p))
}

// hlogFile is hlogPath's name in a run directory's file system.
func (l Layout) hlogFile(id string, p Phase) string {
	return path.Join(l.Hlog, HlogName(id, p))
}

// ChartPath is the path of a chart file (name and extension) in dir.
func (l Layout) ChartPath(dir, file string) string {
	return filepath.Join(dir, l.Charts, file)
}

// WriteData writes the data files of the run directory dir (created if
// needed) for runs, those the package doc lists but the reports and charts
// (report.RenderRuns'), each atomically (a temporary file, then rename).
// Call it after each run with all the runs so far, so that an interrupted
// command leaves every finished run on disk; interval logs already written
// are not re-encoded, so a call costs little more than the new run's logs.
func WriteData(dir string, runs []Run, meta Meta) error {
	return WriteDataLayout(dir, runs, meta, StandardLayout)
}

// WriteDataLayout is WriteData in the layout l: the tests write old
// layouts with it.
func WriteDataLayout(dir string, runs []Run, meta Meta, l Layout) error {
	if err := os.MkdirAll(filepath.Join(dir, l.Hlog), 0o755); err != nil {
		return fmt.Errorf("results: %w", err)
	}
	runs = NormalizedRuns(runs)
	ss := SummariesOf(runs)
	ids := FileIDs(ss)
	for i, r := range runs {
		if r.OnDisk {
			continue
		}
		for p := Phase(0); p < NumPhases; p++ {
			path := l.hlogPath(dir, ids[i], p)
			fp, write := hlogFingerprint(r, p), func(w io.Writer) error { return WriteHlog(w, r, p) }
			if r.Log != nil {
				fp, write = r.Log.Fingerprint(r, p), func(w io.Writer) error { return r.Log.WriteHlog(w, r, p) }
			}
			if hasFingerprint(path, fp) {
				continue // written by an earlier call, unchanged
			}
			err := WriteFileAtomic(path, write)
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
		if err := WriteFileAtomic(filepath.Join(dir, f.name), f.write); err != nil {
			return err
		}
	}
	return nil
}

// NormalizedRuns is a copy of runs with normalised summaries, so the files
// written now and those Render reads back later describe the very same
// summaries.
func NormalizedRuns(runs []Run) []Run {
	runs = append([]Run(nil), runs...)
	for i := range runs {
		runs[i].Summary = normalized(runs[i].Summary)
	}
	return runs
}

// WriteMeta rewrites the meta.json of the run directory dir alone, as a
// command does when it ends (with the load average after).
func WriteMeta(dir string, meta Meta) error {
	return WriteFileAtomic(filepath.Join(dir, MetaFile), func(w io.Writer) error { return writeMeta(w, meta) })
}

func writeMeta(w io.Writer, meta Meta) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(meta); err != nil {
		return fmt.Errorf("results: encoding meta: %w", err)
	}
	return nil
}

// LoadDir reads a run directory written by WriteData back, packed (Pack)
// or not: the summaries from summary.json, the histograms from the interval
// logs (LayoutOf; Total is the merge of a run's intervals), and meta.json
// (zero Meta when missing). A missing interval log leaves that phase empty;
// a run written without intervals comes back without them (its log holds
// one WholeRunTag histogram). It holds every interval of every phase: see
// the package doc's caveats.
func LoadDir(dir string) ([]Run, Meta, error) {
	fsys, err := OpenDir(dir)
	if err != nil {
		return nil, Meta{}, err
	}
	meta, ss, err := ReadDirDataFS(fsys)
	if err != nil {
		return nil, Meta{}, err
	}
	runs, err := LoadRuns(context.Background(), fsys, LayoutOfFS(fsys), ss, func(*Summary, Phase) (bool, bool) { return true, true })
	if err != nil {
		return nil, Meta{}, err
	}
	for i := range runs {
		fillEmpty(&runs[i])
	}
	return runs, meta, nil
}

// ReadDirData reads the run directory dir's meta.json (zero Meta when
// missing) and summary.json, packed or not (OpenDir).
func ReadDirData(dir string) (Meta, []Summary, error) {
	fsys, err := OpenDir(dir)
	if err != nil {
		return Meta{}, nil, err
	}
	return ReadDirDataFS(fsys)
}

// ReadDirDataFS is ReadDirData of a run directory's file system, as
// OpenDir returns it.
func ReadDirDataFS(fsys fs.FS) (Meta, []Summary, error) {
	meta, err := readMeta(fsys)
	if err != nil {
		return Meta{}, nil, err
	}
	f, err := fsys.Open(SummaryJSONFile)
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

// readMeta reads fsys's meta.json; zero Meta when there is none.
func readMeta(fsys fs.FS) (Meta, error) {
	var meta Meta
	data, err := fs.ReadFile(fsys, MetaFile)
	if errors.Is(err, fs.ErrNotExist) {
		return meta, nil
	}
	if err != nil {
		return Meta{}, fmt.Errorf("results: %w", err)
	}
	if err := json.Unmarshal(data, &meta); err != nil {
		return Meta{}, fmt.Errorf("results: %s: %w", MetaFile, err)
	}
	return meta, nil
}

// LoadRuns reads the interval logs of ss from the run directory fsys
// (OpenDir), laid out as l. want says, per run and phase,
// whether to read the log at all and whether to keep its intervals (else
// only their merge, Total, is kept). It stops with ctx's error once ctx is
// done.
func LoadRuns(ctx context.Context, fsys fs.FS, l Layout, ss []Summary, want func(s *Summary, p Phase) (load, intervals bool)) ([]Run, error) {
	return loadRuns(ctx, fsys, l, ss, want, false)
}

// LoadRunsSparse is LoadRuns holding what it reads as Sparse histograms,
// in Run.SparseTotal and Interval.Sparse (Total and Hists stay nil): the
// same counts, maxima and percentiles in a fraction of the memory, for
// drawing the report of a long command (report.Render), where LoadRuns
// holds a gigabyte of fitted histograms.
func LoadRunsSparse(ctx context.Context, fsys fs.FS, l Layout, ss []Summary, want func(s *Summary, p Phase) (load, intervals bool)) ([]Run, error) {
	return loadRuns(ctx, fsys, l, ss, want, true)
}

func loadRuns(ctx context.Context, fsys fs.FS, l Layout, ss []Summary, want func(s *Summary, p Phase) (load, intervals bool), sparse bool) ([]Run, error) {
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
			if err := loadPhase(fsys, l.hlogFile(ids[i], p), r, p, keep, sparse); err != nil {
				return nil, err
			}
		}
	}
	return runs, nil
}

// loadPhase reads the interval log name of fsys into phase p of r: its
// merge into Total (SparseTotal when sparse) and, when keep, each
// interval's histogram, fitted (Sparse when sparse). A missing or empty
// log leaves r as it is. It holds one decoded interval at a time beyond
// those it keeps.
func loadPhase(fsys fs.FS, name string, r *Run, p Phase, keep, sparse bool) error {
	f, err := fsys.Open(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("results: %w", err)
	}
	defer f.Close()
	place := func(iv Interval, j int) {
		if j == len(r.Intervals) {
			r.Intervals = append(r.Intervals, Interval{StartNs: iv.StartNs, EndNs: iv.EndNs})
		}
		if sparse {
			r.Intervals[j].Sparse[p] = SparseOf(iv.Hists[p])
		} else {
			r.Intervals[j].Hists[p] = fitted(iv.Hists[p])
		}
	}
	// An interval is placed once the next one is read: a log of one
	// interval tagged WholeRunTag is a whole run, not a time series.
	var (
		total   *hdrhistogram.Histogram
		pending Interval
		n       int
	)
	err = eachHlogInterval(f, p, func(iv Interval) {
		if total == nil {
			total = NewHistogram()
		}
		total.Merge(iv.Hists[p])
		if keep && n > 0 {
			place(pending, n-1)
		}
		pending = iv
		n++
	})
	if err != nil {
		return fmt.Errorf("results: %s: %w", name, err)
	}
	if total == nil {
		return nil
	}
	if keep && (n > 1 || pending.Hists[p].Tag() != WholeRunTag) {
		place(pending, n-1)
	}
	if sparse {
		r.SparseTotal[p] = SparseOf(total)
	} else {
		r.Total[p] = fitted(total)
	}
	return nil
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

// fitted is h in a histogram that covers values only up to h's largest,
// with the same buckets below it: the same counts, quantiles, mean and
// extremes in a fraction of the memory (an interval's latencies seldom
// reach the minutes a histogram covers), for the intervals of a long
// command read back at once.
func fitted(h *hdrhistogram.Histogram) *hdrhistogram.Histogram {
	lo := h.LowestTrackableValue()
	hi := max(h.Max(), 2*lo)
	if hi >= h.HighestTrackableValue() {
		return h
	}
	f := hdrhistogram.New(lo, hi, int(h.SignificantFigures()))
	if f.Merge(h) != 0 {
		return h
	}
	f.SetTag(h.Tag())
	f.SetStartTimeMs(h.StartTimeMs())
	f.SetEndTimeMs(h.EndTimeMs())
	return f
}
