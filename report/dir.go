package report

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"

	"github.com/lockbench/lockbench/results"
)

// WriteDir writes a whole run directory at once: WriteData, then
// RenderRuns. A command that adds runs one by one calls WriteData after
// each and RenderRuns once at the end instead.
func WriteDir(dir string, runs []results.Run, meta results.Meta) error {
	if err := results.WriteData(dir, runs, meta); err != nil {
		return err
	}
	return RenderRuns(dir, runs, meta)
}

// RenderRuns draws the charts of runs into dir's charts/ (PNG and SVG; PNG
// alone in a packed directory, whose archive holds the SVGs) and writes
// report.md and report.html, from the runs in memory: those WriteData
// wrote. Drawing is costly and only the whole set is worth it, so a command
// calls it once, when it ends, interrupted or not.
func RenderRuns(dir string, runs []results.Run, meta results.Meta) error {
	return renderFiles(context.Background(), dir, results.NormalizedRuns(runs), meta, results.StandardLayout)
}

// renderFiles draws the charts into l.Charts and writes report.md and
// report.html. Once ctx is done it writes nothing more and returns its
// error: every file already written is whole, the rest keep their old
// content.
func renderFiles(ctx context.Context, dir string, runs []results.Run, meta results.Meta, l results.Layout) error {
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
		err := results.WriteFileAtomic(l.ChartPath(dir, ch.Name+".png"), ch.WritePNG)
		if err == nil && meta.Archive == nil { // a packed directory's SVGs are in its archive
			err = results.WriteFileAtomic(l.ChartPath(dir, ch.Name+".svg"), ch.WriteSVG)
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
	ss := results.SummariesOf(runs)
	err := results.WriteFileAtomic(filepath.Join(dir, results.ReportFile), func(w io.Writer) error {
		return WriteReport(w, ss, meta, cs, l)
	})
	htmlErr := results.WriteFileAtomic(filepath.Join(dir, results.ReportHTMLFile), func(w io.Writer) error {
		return WriteHTML(w, runs, meta, cs, l)
	})
	return errors.Join(append(errs, err, htmlErr)...)
}

// Render re-draws the charts, report.md and report.html of a run directory
// from its data files alone (summary.json, meta.json, the interval logs):
// `lockbench report DIR`. It reads only the histograms the charts need and
// keeps the directory's layout (LayoutOf); a packed directory (results.Pack)
// is read through its archive and drawn into the directory itself. Once ctx
// is done it stops between two files and returns ctx's error.
func Render(ctx context.Context, dir string) error {
	// Decoded intervals are garbage at once: collect more eagerly while
	// reading (see "Redrawing a directory" in the package doc).
	defer debug.SetGCPercent(debug.SetGCPercent(50))
	fsys, err := results.OpenDir(dir)
	if err != nil {
		return err
	}
	meta, ss, err := results.ReadDirDataFS(fsys)
	if err != nil {
		return err
	}
	l := results.LayoutOfFS(fsys)
	// The spectra need the whole-run histograms of their runs, the
	// timelines the intervals of the faulted runs; nothing else reads
	// a histogram.
	inSpectrum := spectrumFilter(ss)
	runs, err := results.LoadRunsSparse(ctx, fsys, l, ss, func(s *results.Summary, p results.Phase) (load, intervals bool) {
		switch p {
		case results.Acquire:
			return inSpectrum(s), false
		case results.Total:
			return inSpectrum(s) || s.HasFault(), s.HasFault()
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
