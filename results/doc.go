// Package results models a lockbench run (counters and HDR histograms) and
// writes it out: one small encoder per format (JSON, CSV, HdrHistogram
// interval logs, Go benchmark format, charts, report.md), as vegeta's
// Encoder/Reporter functions do.
//
// Units: every time in a file is in nanoseconds (fields end in _ns or are
// documented as such); human units appear only on screen and in charts.
//
// A run directory (SPEC §6) is written by WriteDir, read back by LoadDir and
// re-rendered from its data files by Render:
//
//	summary.json, summary.csv   every run's Summary (WriteJSON, WriteCSV)
//	<id>.<phase>.hlog           interval logs per run and phase (WriteHlog)
//	bench.txt                   Go benchmark format (WriteBench)
//	verdicts.json               the verdict runs, when faults ran (VerdictRuns)
//	meta.json                   Meta: title, command, date, host
//	<chart>.png, <chart>.svg    charts (BuildCharts)
//	report.md                   header, verdicts, results, charts (WriteReport)
//
// Charts and the report pick their input by name: scenario "base" for the
// latency spectrum, scenarios starting "contention" and "sweep" for the two
// sweep charts, any scenario with a fault for the verdicts (see
// BuildCharts). Every strategy keeps one colour in every chart
// (StrategyColors).
//
// Caveats: hdrhistogram-go histograms are not goroutine-safe (see
// Recorder), and each takes about 150 kB, so LoadDir of a long run holds
// intervals × phases of them; interval times in .hlog files are kept to the
// millisecond.
package results
