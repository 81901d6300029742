package results

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
)

// csvColumn is one column of summary.csv: its header and how to read it
// from a summary.
type csvColumn struct {
	name  string
	value func(s *Summary) string
}

func i64(v int64) string     { return strconv.FormatInt(v, 10) }
func f64(v float64) string   { return strconv.FormatFloat(v, 'f', -1, 64) }
func boolStr(v bool) string  { return strconv.FormatBool(v) }
func intStr(v int) string    { return strconv.Itoa(v) }
func roundF(v float64) int64 { return int64(v + 0.5) }

// fixedCSVColumns come before the latency and error columns, in this order.
// Units are in the names; times are nanoseconds.
var fixedCSVColumns = []csvColumn{
	{"strategy", func(s *Summary) string { return s.Strategy }},
	{"scenario", func(s *Summary) string { return s.Scenario }},
	{"fault", func(s *Summary) string { return s.Fault }},
	{"variant", func(s *Summary) string { return s.Variant }},
	{"trial", func(s *Summary) string { return intStr(max(s.Trial, 1)) }},
	{"fencing", func(s *Summary) string { return boolStr(s.Fencing) }},
	{"unsafe", func(s *Summary) string { return boolStr(s.Unsafe) }},
	{"verdict", func(s *Summary) string { return s.Verdict }},
	{"unsafe_count", func(s *Summary) string { return i64(s.UnsafeCount()) }},
	{"payments", func(s *Summary) string { return i64(s.Payments) }},
	{"deliveries", func(s *Summary) string { return i64(s.Deliveries) }},
	{"processed", func(s *Summary) string { return i64(s.Processed) }},
	{"duplicates", func(s *Summary) string { return i64(s.Duplicates) }},
	{"lost", func(s *Summary) string { return i64(s.Lost) }},
	{"unprocessed", func(s *Summary) string { return i64(s.Unprocessed) }},
	{"overdrafts", func(s *Summary) string { return i64(s.Overdrafts) }},
	{"lost_updates", func(s *Summary) string { return i64(s.LostUpdates) }},
	{"overlaps", func(s *Summary) string { return i64(s.Overlaps) }},
	{"overlap_ns", func(s *Summary) string { return i64(s.OverlapNs) }},
	{"overlap_max_ns", func(s *Summary) string { return i64(s.OverlapMaxNs) }},
	{"strikes", func(s *Summary) string { return i64(s.Strikes) }},
	{"unsafe_strikes", func(s *Summary) string { return i64(s.UnsafeStrikes) }},
	{"strikes_missed", func(s *Summary) string { return i64(s.StrikesMissed) }},
	{"stale_rejected", func(s *Summary) string { return i64(s.StaleRejected) }},
	{"stale_accepted", func(s *Summary) string { return i64(s.StaleAccepted) }},
	{"token_regressed", func(s *Summary) string { return i64(s.TokenRegressed) }},
	{"token_reused", func(s *Summary) string { return i64(s.TokenReused) }},
	{"not_acquired", func(s *Summary) string { return i64(s.NotAcquired) }},
	{"conflicts", func(s *Summary) string { return i64(s.Conflicts) }},
	{"availability", func(s *Summary) string { return f64(s.Availability) }},
	{"ops_per_sec", func(s *Summary) string { return f64(s.OpsPerSec) }},
	{"payments_per_sec", func(s *Summary) string { return f64(s.PaymentsPerSec) }},
	{"duration_ns", func(s *Summary) string { return i64(s.DurationNs) }},
	{"behind_ns", func(s *Summary) string { return i64(s.BehindNs) }},
	{"interrupted", func(s *Summary) string { return boolStr(s.Interrupted) }},
	{"instances", func(s *Summary) string { return intStr(s.Params.Instances) }},
	{"workers", func(s *Summary) string { return intStr(s.Params.Workers) }},
	{"deliveries_each", func(s *Summary) string { return intStr(s.Params.DeliveriesEach) }},
	{"accounts", func(s *Summary) string { return intStr(s.Params.Accounts) }},
	{"account_dist", func(s *Summary) string { return s.Params.AccountDist }},
	{"lock_key", func(s *Summary) string { return s.Params.LockKey }},
	{"rate_per_sec", func(s *Summary) string { return f64(s.Params.Rate) }},
	{"contenders", func(s *Summary) string { return f64(s.Params.Contenders()) }},
	{"hold", func(s *Summary) string { return s.Params.Hold }},
	{"ttl_ns", func(s *Summary) string { return i64(s.Params.TTLNs) }},
	{"store", func(s *Summary) string { return s.Params.Store }},
	{"instance_mode", func(s *Summary) string { return s.Params.InstanceMode }},
	{"seed", func(s *Summary) string { return i64(s.Params.Seed) }},
}

type latencyStat struct {
	stat  string
	value func(l Latency) string
}

// csvStat is the cell of statistic stat: empty when it is not reported
// (Latency.Has), as in JSON it is null.
func csvStat(stat string) func(l Latency) string {
	return func(l Latency) string {
		v, ok := l.Value(stat)
		if !ok {
			return ""
		}
		return i64(v)
	}
}

// latencyCSVBlocks are the per-phase statistics, "<phase>_<stat>", in three
// blocks so the distribution reads acquire_p50_ns … total_max_ns in one
// run of columns, then the means, then the counts. A percentile with fewer
// than MinTailSamples samples beyond it is an empty cell.
var latencyCSVBlocks = [][]latencyStat{
	{
		{"p50_ns", csvStat(StatP50)},
		{"p90_ns", csvStat(StatP90)},
		{"p99_ns", csvStat(StatP99)},
		{"p999_ns", csvStat(StatP999)},
		{"max_ns", csvStat(StatMax)},
	},
	{{"mean_ns", csvStat(StatMean)}},
	{{"count", func(l Latency) string { return i64(l.Count) }}},
}

// csvColumns returns every column of summary.csv for ss: the fixed ones,
// then latency per phase (acquire_p50_ns … total_max_ns, the means
// acquire_mean_ns … total_mean_ns, the counts acquire_count …
// total_count), then errors_total
// and one errors_<class> column per class seen in ss (timeout, refused,
// other first, the rest sorted). The order is stable for a given set of
// error classes.
func csvColumns(ss []Summary) []csvColumn {
	cols := append([]csvColumn(nil), fixedCSVColumns...)
	for _, block := range latencyCSVBlocks {
		for _, phase := range PhaseNames {
			for _, lc := range block {
				cols = append(cols, csvColumn{phase + "_" + lc.stat, func(s *Summary) string {
					return lc.value(s.Latency[phase])
				}})
			}
		}
	}
	cols = append(cols, csvColumn{"errors_total", func(s *Summary) string {
		var n int64
		for _, v := range s.Errors {
			n += v
		}
		return i64(n)
	}})
	// The known classes always have a column, so scripts can rely on them.
	maps := []map[string]int64{setOf(knownErrorClasses)}
	for i := range ss {
		maps = append(maps, ss[i].Errors)
	}
	classes := ErrorClasses(maps...)
	for _, class := range classes {
		cols = append(cols, csvColumn{"errors_" + Sanitize(class), func(s *Summary) string {
			return i64(s.Errors[class])
		}})
	}
	return cols
}

func setOf(xs []string) map[string]int64 {
	m := make(map[string]int64, len(xs))
	for _, x := range xs {
		m[x] = 1
	}
	return m
}

// WriteCSV writes ss as summary.csv: a header row, then one row per
// summary with flat columns (see the package tests' golden file for the
// exact order). Times are nanoseconds; rates are per second.
func WriteCSV(w io.Writer, ss []Summary) error {
	cols := csvColumns(ss)
	cw := csv.NewWriter(w)
	row := make([]string, len(cols))
	for i, c := range cols {
		row[i] = c.name
	}
	if err := cw.Write(row); err != nil {
		return fmt.Errorf("results: writing csv: %w", err)
	}
	for i := range ss {
		for j, c := range cols {
			row[j] = c.value(&ss[i])
		}
		if err := cw.Write(row); err != nil {
			return fmt.Errorf("results: writing csv: %w", err)
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("results: writing csv: %w", err)
	}
	return nil
}
