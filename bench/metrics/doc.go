// Package metrics serves lockbench's live Prometheus metrics while load
// runs (`--metrics-addr HOST:PORT`): payments, lock cycles and errors as
// counters, the unsafe outcomes the store has judged so far as gauges,
// and acquire and total latency as histograms, every one labelled with
// the run's strategy, scenario, fault, variant and trial. Names start
// lockbench_ and times are in seconds, as Prometheus expects.
//
// It is fed without touching the workers' path: loadgen.Run hands each
// measured latency interval and, once per interval, the counts so far
// (its loadgen.Reporter: Run.Reporter) to a Run, which turns
// them into increments. A histogram is filled from the interval's
// HdrHistogram, one observation per recorded value at the lowest value of
// its HdrHistogram bucket (3 significant figures, far finer than any
// Prometheus bucket). That costs about 300ns per delivery (both
// histograms, classic and native buckets) on the collector's goroutine,
// 3% of a core at 100,000 deliveries/s, and nothing without
// --metrics-addr.
//
// The server (Listen) closes a connection that has not sent a request's
// headers within HandshakeTimeout, and of more than MaxPending
// connections waiting for theirs the oldest (internal/handshake); a
// keep-alive connection idle between scrapes stays open.
//
// Caveats: counters include the warmup, histograms only measured
// intervals (as summary.json's latencies do). Runs that share all five
// labels (the points of a matrix's contention sweep, say) add to the same
// series: a counter keeps rising across them, as Prometheus wants, and a
// gauge shows the latest. A scraper that asks for protobuf gets native
// histograms beside the classic buckets.
package metrics
