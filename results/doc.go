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
// # Packing
//
// Pack puts a finished directory's data into one archive (ArchiveFile) for
// publishing; what a person or a page opens without lockbench (meta.json,
// the reports, the PNG charts) stays beside it. meta.json records the
// archive's name, size and SHA-256; the packed files, and the folders they
// leave empty (hlog/), are removed once the archive has been read back
// whole. Files are packed in path order with fixed times (the run's start),
// so packing the same directory twice gives the same bytes; a directory
// packed already is packed again with its archive's files and any new
// ones. A build without version control information is not refused.
// OpenDir, and so every reader of a run directory, reads the packed
// directory as it read the unpacked one.
//
// # Recording latencies
//
// A Recorder's buffer is a list of fixed-size chunks (recorderChunk
// values) that a drain hands back for reuse, to every recorder of the
// process, so the next run's workers write to memory already mapped and
// cached. Each value is tagged with its phase or outcome in its top byte.
// Filling the buffer never copies what is already in it (a growing slice
// per phase would, about five times over for a slice that grows by a
// quarter at a time), and a cycle's values go in with one bounds check.
//
// A cycle's recording touches the recorder's first 32 bytes (RecorderHead):
// its mutex and the chunk being filled (TestRecorderHead). A worker that
// holds its recorder in its own struct puts them on the cache line of its
// own that a cycle touches anyway (package loadgen's worker), and keeps
// other workers' writes off that line.
//
// A Batch groups the values it took by slot and octave before it records
// them. At 3 significant figures a histogram has 22,528 counts (176 KB),
// and the values of a few milliseconds of lock cycles rarely land twice in
// one count's cache line; between two drains the server and the client
// evict those lines, so recorded in the order they came nearly every value
// is a miss. In a CPU profile of compare-redis on the development VM in a
// busy hour (900,000 cycles), the collector's recording took 0.62 s of the
// harness's 2.7 s in arrival order, 0.39 s of it in the histogram's one
// increment; grouped, 0.09 s in a like hour. (In a quiet hour, alternating
// the two in one run: 0.09 s in arrival order, under 0.01 s grouped.)
// Ordered by phase and octave (a counting sort: one pass, no comparisons),
// one octave's values are recorded together, into its 1,024 counts (8 KB),
// which stay in the first-level cache while they are. BenchmarkRecordCold
// models it: a fifth less time with every cache flushed between drains.
// With the caches warm the grouping costs more than it saves:
// BenchmarkHarnessCeiling, whose no-op lock leaves them warm, pays about
// 100 ns a cycle for it. Grouping by a whole byte of slot would make 16,384
// groups, whose 64 KB of counts Record would clear and sum at every drain:
// 3 MB a second of the collector's memory traffic, in the caches the lock
// client's calls need.
//
// # Caveats
//
// hdrhistogram-go histograms are not goroutine-safe (see Recorder), and
// each takes about 150 kB, so LoadDir of a long run holds intervals ×
// phases of them, fitted to their largest values (tens of kilobytes each).
// LoadRunsSparse holds them as Sparse histograms, which answer what the
// charts ask: 16 bytes a non-empty bucket, where an HdrHistogram of
// NewHistogram's bounds takes 8 for every bucket up to its highest, so an
// interval of a fault run read back, a few dozen buckets, takes under a
// kilobyte. Interval times in .hlog files are kept to the millisecond.
package results
