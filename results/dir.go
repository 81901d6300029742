package results

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// The files of a run directory (SPEC §6), besides the *.hlog interval logs
// (HlogName) and the charts (<Chart.Name>.png and .svg).
const (
	// SummaryJSONFile is every run's Summary, a JSON array (SPEC §2).
	SummaryJSONFile = "summary.json"
	// SummaryCSVFile is the same, one row per run (WriteCSV).
	SummaryCSVFile = "summary.csv"
	// BenchFile is the Go benchmark format, for benchstat (WriteBench).
	BenchFile = "bench.txt"
	// VerdictsFile is the Summary of every verdict run (VerdictRuns),
	// written only when a fault ran.
	VerdictsFile = "verdicts.json"
	// MetaFile is the directory's Meta.
	MetaFile = "meta.json"
	// ReportFile is what a person reads first (WriteReport).
	ReportFile = "report.md"
)

// WriteDir writes the run directory dir (created if needed) for runs:
// an interval log per run and phase, summary.json, summary.csv, bench.txt,
// verdicts.json when faults ran, meta.json, the charts as PNG and SVG, and
// report.md last. Every file is written atomically (temporary file in dir,
// then rename), so an interrupted run leaves a readable directory; call it
// again after each run with all the runs so far to keep the directory
// current (interval logs of runs already written are not re-encoded). Data
// files are written before charts; a chart that fails to
// draw is left out (and named in report.md) and its error returned after
// everything else was written.
func WriteDir(dir string, runs []Run, meta Meta) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("results: %w", err)
	}
	// Normalise once so the files written now and those `Render` reads back
	// later describe the very same summaries.
	runs = append([]Run(nil), runs...)
	for i := range runs {
		runs[i].Summary = normalized(runs[i].Summary)
	}
	ss := summariesOf(runs)
	ids := FileIDs(ss)
	for i, r := range runs {
		for p := Phase(0); p < NumPhases; p++ {
			path := filepath.Join(dir, HlogName(ids[i], p))
			if hasFingerprint(path, hlogFingerprint(r, p)) {
				continue // written by an earlier call, unchanged
			}
			err := writeFileAtomic(path, func(w io.Writer) error { return WriteHlog(w, r, p) })
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
	if v := VerdictRuns(ss); len(v) > 0 {
		files = append(files, struct {
			name  string
			write func(io.Writer) error
		}{VerdictsFile, func(w io.Writer) error { return WriteJSON(w, v) }})
	}
	for _, f := range files {
		if err := writeFileAtomic(filepath.Join(dir, f.name), f.write); err != nil {
			return err
		}
	}
	return renderFiles(dir, runs, meta)
}

// renderFiles draws the charts and writes report.md.
func renderFiles(dir string, runs []Run, meta Meta) error {
	cs, buildErr := BuildCharts(runs)
	errs := []error{buildErr}
	drawn := cs.Charts[:0:0]
	for _, ch := range cs.Charts {
		err := writeFileAtomic(filepath.Join(dir, ch.Name+".png"), ch.WritePNG)
		if err == nil {
			err = writeFileAtomic(filepath.Join(dir, ch.Name+".svg"), ch.WriteSVG)
		}
		if err != nil {
			errs = append(errs, err)
			cs.Missing = append(cs.Missing, fmt.Sprintf("%s: could not be written (%v).", ch.Title, err))
			continue
		}
		drawn = append(drawn, ch)
	}
	cs.Charts = drawn
	ss := summariesOf(runs)
	err := writeFileAtomic(filepath.Join(dir, ReportFile), func(w io.Writer) error {
		return WriteReport(w, ss, meta, cs)
	})
	return errors.Join(append(errs, err)...)
}

func writeMeta(w io.Writer, meta Meta) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(meta); err != nil {
		return fmt.Errorf("results: encoding meta: %w", err)
	}
	return nil
}

// LoadDir reads a run directory written by WriteDir back: the summaries
// from summary.json, the histograms from the *.hlog files (Total is the
// merge of a run's intervals), and meta.json (zero Meta when missing). A
// missing interval log leaves that phase empty. Interval times come back
// to the millisecond; a run written without intervals comes back without
// them (its log holds one WholeRunTag histogram). Memory: every interval of every phase is held, about
// a quarter of a megabyte per histogram.
func LoadDir(dir string) ([]Run, Meta, error) {
	meta, ss, err := readDirData(dir)
	if err != nil {
		return nil, Meta{}, err
	}
	runs, err := loadRuns(dir, ss, func(*Summary, Phase) (bool, bool) { return true, true })
	if err != nil {
		return nil, Meta{}, err
	}
	for i := range runs {
		fillEmpty(&runs[i])
	}
	return runs, meta, nil
}

// Render re-draws the charts and report.md of a run directory from its data
// files alone (summary.json, meta.json, *.hlog): `lockbench report DIR`.
// It reads only the histograms the charts need.
func Render(dir string) error {
	meta, ss, err := readDirData(dir)
	if err != nil {
		return err
	}
	runs, err := loadRuns(dir, ss, func(s *Summary, p Phase) (load, intervals bool) {
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
	return renderFiles(dir, runs, meta)
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
// only their merge, Total, is kept).
func loadRuns(dir string, ss []Summary, want func(s *Summary, p Phase) (load, intervals bool)) ([]Run, error) {
	ids := FileIDs(ss)
	runs := make([]Run, len(ss))
	for i := range ss {
		r := &runs[i]
		r.Summary = ss[i]
		for p := Phase(0); p < NumPhases; p++ {
			load, keep := want(&r.Summary, p)
			if !load {
				continue
			}
			ivs, err := readHlogFile(filepath.Join(dir, HlogName(ids[i], p)), p)
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
