// Package results models a lockbench run (counters and HDR histograms) and
// writes it out: one small encoder per format (JSON, CSV, HdrHistogram
// interval logs, Go benchmark format, charts, report.md), as vegeta's
// Encoder/Reporter functions do.
//
// Units: every time in a file is in nanoseconds (fields end in _ns or are
// documented as such); human units appear only on screen and in charts.
package results
