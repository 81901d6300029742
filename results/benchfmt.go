package results

import (
	"fmt"
	"io"
	"math"
	"runtime"
	"strconv"
	"strings"
)

// BenchPkg is the pkg line of bench.txt.
const BenchPkg = "github.com/lockbench/lockbench"

// benchMetric is one value/unit pair of a bench.txt line.
type benchMetric struct {
	unit string
	// better is "higher" for units where more is better; lower is the
	// default and is not written.
	better string
	// value is the metric of s, and false when s does not report it (a
	// percentile with too few samples beyond it): the line leaves it out.
	value func(s *Summary) (float64, bool)
}

func lat(phase, stat string) func(s *Summary) (float64, bool) {
	return func(s *Summary) (float64, bool) {
		v, ok := s.Latency[phase].Value(stat)
		return float64(v), ok
	}
}

func count(pick func(s *Summary) int64) func(s *Summary) (float64, bool) {
	return func(s *Summary) (float64, bool) { return float64(pick(s)), true }
}

func rate(pick func(s *Summary) float64) func(s *Summary) (float64, bool) {
	return func(s *Summary) (float64, bool) { return pick(s), true }
}

// benchMetrics are the measurements on every bench.txt line, in order. Unit
// names carry their unit (-ns); benchstat rescales those to seconds.
var benchMetrics = []benchMetric{
	{"payments/s", "higher", rate(func(s *Summary) float64 { return s.PaymentsPerSec })},
	{"ops/s", "higher", rate(func(s *Summary) float64 { return s.OpsPerSec })},
	{"acquire-p50-ns", "", lat("acquire", StatP50)},
	{"acquire-p99-ns", "", lat("acquire", StatP99)},
	{"acquire-p999-ns", "", lat("acquire", StatP999)},
	{"total-p50-ns", "", lat("total", StatP50)},
	{"total-p99-ns", "", lat("total", StatP99)},
	{"total-p999-ns", "", lat("total", StatP999)},
	{"unsafe", "", count(func(s *Summary) int64 { return s.UnsafeCount() })},
	{"duplicates", "", count(func(s *Summary) int64 { return s.Duplicates })},
	{"lost", "", count(func(s *Summary) int64 { return s.Lost })},
	{"overdrafts", "", count(func(s *Summary) int64 { return s.Overdrafts })},
	{"lost-updates", "", count(func(s *Summary) int64 { return s.LostUpdates })},
	{"stale-accepted", "", count(func(s *Summary) int64 { return s.StaleAccepted })},
	{"stale-rejected", "", count(func(s *Summary) int64 { return s.StaleRejected })},
	{"token-regressed", "", count(func(s *Summary) int64 { return s.TokenRegressed })},
	{"overlaps", "", count(func(s *Summary) int64 { return s.Overlaps })},
	{"unprocessed", "", count(func(s *Summary) int64 { return s.Unprocessed })},
	{"not-acquired", "", count(func(s *Summary) int64 { return s.NotAcquired })},
	{"conflicts", "", count(func(s *Summary) int64 { return s.Conflicts })},
	{"errors", "", count(func(s *Summary) int64 {
		var n int64
		for _, v := range s.Errors {
			n += v
		}
		return n
	})},
}

// BenchName is the Go benchmark name of a run (the same for every trial of
// a cell, so benchstat reads the trials as repeated measurements):
// "BenchmarkLockbench/strategy=setnx/scenario=base/fault=none/fencing=false",
// with "/rate=R" added for rate sweeps and "/contenders=C" for contention
// sweeps so their points are distinct benchmarks to benchstat.
func BenchName(s *Summary) string {
	var b strings.Builder
	b.WriteString("BenchmarkLockbench")
	kv := func(k, v string) {
		b.WriteString("/" + k + "=" + benchValue(v))
	}
	fault := s.Fault
	if fault == "" {
		fault = FaultNone
	}
	kv("strategy", s.Strategy)
	kv("scenario", s.Scenario)
	kv("fault", fault)
	if s.Variant != "" {
		kv("variant", s.Variant)
	}
	kv("fencing", strconv.FormatBool(s.Fencing))
	if InSweep(s, ScenarioSweep) {
		kv("rate", strconv.FormatFloat(s.Params.Rate, 'f', -1, 64))
	}
	if InSweep(s, ScenarioContention) {
		kv("contenders", strconv.FormatFloat(s.Params.Contenders(), 'f', -1, 64))
	}
	return b.String()
}

// benchValue keeps a name part free of the characters that would split
// the name ("/", white space).
func benchValue(v string) string {
	if v == "" {
		return "none"
	}
	return strings.Map(func(r rune) rune {
		if r == '/' || r == ' ' || r == '\t' || r == '\n' {
			return '_'
		}
		return r
	}, v)
}

// WriteBench writes ss in the Go benchmark format as bench.txt, readable by
// benchstat: a goos/goarch/pkg/cpu header from host (this machine's GOOS
// and GOARCH when empty), unit metadata lines, then one line per run. The
// iteration count is the number of payments and ns/op is the measured
// duration per payment. A percentile a run does not report (Latency.Has)
// is left out of its line.
func WriteBench(w io.Writer, ss []Summary, host Host) error {
	goos, goarch := host.OS, host.Arch
	if goos == "" {
		goos = runtime.GOOS
	}
	if goarch == "" {
		goarch = runtime.GOARCH
	}
	var b strings.Builder
	fmt.Fprintf(&b, "goos: %s\ngoarch: %s\npkg: %s\n", goos, goarch, BenchPkg)
	if host.CPU != "" {
		fmt.Fprintf(&b, "cpu: %s\n", host.CPU)
	}
	for _, m := range benchMetrics {
		if m.better != "" {
			fmt.Fprintf(&b, "Unit %s better=%s\n", m.unit, m.better)
		}
	}
	for i := range ss {
		s := &ss[i]
		n := s.Payments
		var nsPerOp float64
		if n > 0 {
			nsPerOp = float64(s.DurationNs) / float64(n)
		} else {
			n = 1 // benchfmt requires a positive iteration count
		}
		fmt.Fprintf(&b, "%s\t%d\t%s ns/op", BenchName(s), n, benchFloat(nsPerOp))
		for _, m := range benchMetrics {
			if v, ok := m.value(s); ok {
				fmt.Fprintf(&b, "\t%s %s", benchFloat(v), m.unit)
			}
		}
		b.WriteByte('\n')
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("results: writing bench: %w", err)
	}
	return nil
}

func benchFloat(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "0"
	}
	if v == float64(int64(v)) {
		return strconv.FormatInt(int64(v), 10)
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}
