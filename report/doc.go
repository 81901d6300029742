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
package report
