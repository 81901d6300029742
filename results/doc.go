// Package results models a lockbench run (counters and HDR histograms) and
// writes it out: one small encoder per format (JSON, CSV, HdrHistogram
// interval logs, Go benchmark format, charts, report.md), as vegeta's
// Encoder/Reporter functions do.
//
// Units: every time in a file is in nanoseconds (fields end in _ns or are
// documented as such); human units appear only on screen and in charts.
//
// A run directory holds at its top what a person opens first and the data,
// and below it the interval logs and the charts. WriteData writes the data
// files after every run (atomically, so an interrupted command leaves a
// readable directory); RenderRuns draws the charts and report.md once, when
// the command ends; LoadDir reads a directory back and Render re-renders it
// from its data files (old flat directories, with the logs and charts at the
// top, still read):
//
//	report.md                   header, verdicts, results, charts (WriteReport)
//	summary.json, summary.csv   every run's Summary (WriteJSON, WriteCSV)
//	bench.txt                   Go benchmark format (WriteBench)
//	verdicts.json               the verdict runs, when faults ran (VerdictRuns)
//	aggregate.json              one Cell per cell across its trials, when trials ran (Aggregate)
//	meta.json                   Meta: title, command, date, host, build, servers, load
//	hlog/<id>.<phase>.hlog      interval logs per run and phase (WriteHlog)
//	charts/<chart>.png, .svg    charts (BuildCharts)
//
// Charts and the report pick their input by name: scenario "base" for the
// latency spectrum, scenarios starting "contention" and "sweep" for the two
// sweep charts, any scenario with a fault for the verdicts (see
// BuildCharts). Every strategy keeps one colour in every chart
// (strategies.Color).
//
// Trials: a run's Summary.Trial tells the trials of one cell apart; the
// cell's figures are medians over its trials with benchstat's intervals
// (EstimateOf, via golang.org/x/perf/benchmath), its safety k of N trials
// with the Wilson interval (Wilson), and CompareRuns sets two directories
// side by side with the Mann–Whitney U test (Compare). A percentile with
// fewer than MinTailSamples samples beyond it is never written as a
// number (Latency.Has).
//
// Caveats: hdrhistogram-go histograms are not goroutine-safe (see
// Recorder), and each takes about 150 kB, so LoadDir of a long run holds
// intervals × phases of them; interval times in .hlog files are kept to the
// millisecond.
package results
