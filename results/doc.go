// Package results models a lockbench run (counters and HDR histograms),
// writes its data files and reads them back: one small encoder per format
// (JSON, CSV, HdrHistogram interval logs, Go benchmark format), as vegeta's
// Encoder functions do, and the statistics over trials. Drawing it (charts,
// report.md, report.html, comparisons) is package report's.
//
// Units: every time in a file is in nanoseconds (fields end in _ns or are
// documented as such); human units appear only on screen and in charts.
//
// A run directory holds at its top what a person opens first and the data,
// and below it the interval logs and the charts. WriteData writes the data
// files after every run (atomically, so an interrupted command leaves a
// readable directory), and LoadDir reads a directory back (old flat
// directories, with the logs at the top, still read); report.RenderRuns
// draws the charts and reports once, when the command ends, and
// report.Render redraws them from the data files:
//
//	summary.json, summary.csv   every run's Summary (WriteJSON, WriteCSV)
//	bench.txt                   Go benchmark format (WriteBench)
//	verdicts.json               the verdict runs, when faults ran (VerdictRuns)
//	aggregate.json              one Cell per cell across its trials, when trials ran (Aggregate)
//	meta.json                   Meta: title, command, date, host, build, servers, load
//	hlog/<id>.<phase>.hlog      interval logs per run and phase (WriteHlog)
//	report.md, report.html      (package report)
//	charts/<chart>.png, .svg    (package report)
//
// Trials: a run's Summary.Trial tells the trials of one cell apart; the
// cell's figures are medians over its trials with benchstat's intervals
// (EstimateOf, via golang.org/x/perf/benchmath), its safety k of N trials
// with the Wilson interval (Wilson). A percentile with fewer than
// MinTailSamples samples beyond it is never written as a number
// (Latency.Has).
//
// Caveats: hdrhistogram-go histograms are not goroutine-safe (see
// Recorder), and each takes about 150 kB, so LoadDir of a long run holds
// intervals × phases of them, fitted to their largest values;
// LoadRunsSparse holds them as Sparse histograms (their non-empty buckets
// alone), which answer what the charts ask; interval times in .hlog files
// are kept to the millisecond.
package results
