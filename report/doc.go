// Package report draws a run directory's data (package results) for
// people: the charts (PNG and SVG, gonum/plot), report.md, report.html
// (uPlot, vendored in assets/), the tables a command prints, and the
// comparison of two directories (CompareRuns, with the Mann–Whitney U
// test).
//
// Charts and the report pick their input by name: scenario "base" for the
// latency spectrum, scenarios starting "contention" and "sweep" for the two
// sweep charts, any scenario with a fault for the verdicts (see
// BuildCharts). Every strategy keeps one colour in every chart
// (StrategyColor), and strategies are ordered and coloured as Styles says:
// the command layer sets it from the strategies' registry.
//
// RenderRuns draws a command's runs once, when it ends; Render redraws a
// directory from its data files alone (`lockbench report DIR`). A chart
// that fails to draw is left out, named in report.md, and its error
// returned after everything else was written.
//
// # Charts
//
// BuildCharts chooses each chart's input by scenario and fault:
//
//   - latency-spectrum-acquire and -total: the whole-run histograms of the
//     fault-free "base" runs (or, without those, of the first fault-free
//     scenario that is not a sweep);
//   - throughput-contention: the fault-free runs of scenarios named
//     "contention…";
//   - latency-throughput: the fault-free runs of scenarios named "sweep…";
//   - safety-grid: the verdict runs (VerdictRuns);
//   - latency-timeline-<fault>: per fault, the faulted runs with intervals.
//
// Fault runs use finer intervals than the default 1 s, so the fault's shape
// shows in the latency timeline. Its lines are the p99 of each interval
// when every interval drawn has the samples for it (Latency.Has: 1,000),
// else the interval's maximum, which needs none: a short interval at a
// verdict run's rate holds a few dozen deliveries, whose p99 would be a
// guess. A cell that ran several trials has one line per trial, drawn
// alike, with one legend entry.
//
// # report.md
//
// WriteReport writes, in order: a header with the date, command and host;
// when faults ran, the verdicts at a glance (strategies × faults, each cell
// the verdict, its unsafe trials as k of N and its exposure, then a reading
// per strategy); the scenario parameters; the verdict table when faults ran;
// a short results table of the fault-free runs; the charts (PNG links, each
// with a one-line caption) and the charts that were not produced; then the
// directory's files.
//
// The verdict table of single trials (VerdictTable) has the verdict and
// the counts that decide it (duplicates, lost, overdrafts, lost updates,
// stale accepted), then overlaps, stale writes rejected and availability;
// the writes whose token regressed, the longest overlap (exposure) and the
// strikes are columns only when some run has them.
//
// # Redrawing a directory
//
// Render decodes every interval it reads into a histogram of about 180 KB
// that is garbage as soon as it is made sparse, so it sets the garbage
// collector's target to 50% while it runs (a drawing is not timed, a run
// is). At 50 the committed reference (1,359 runs) draws in 178 MB and 7 s;
// at 100, 229 MB and 6 s; at 25, 160 MB and 9 s, and a 161-run directory
// takes 5.5 s where it takes 3 s at 50 (the heap is so small that the
// collector hardly stops).
package report
