package results_test

import (
	"bytes"
	"testing"

	"golang.org/x/perf/benchfmt"

	"github.com/lockbench/lockbench/results"
	"github.com/lockbench/lockbench/results/resultstest"
)

func TestBenchParse(t *testing.T) {
	ss := resultstest.Summaries(append(resultstest.BaseFixtures(0), resultstest.SweepFixtures()[:9]...))
	var buf bytes.Buffer
	if err := results.WriteBench(&buf, ss, results.Host{OS: "linux", Arch: "amd64", CPU: "Test CPU"}); err != nil {
		t.Fatal(err)
	}
	r := benchfmt.NewReader(bytes.NewReader(buf.Bytes()), "bench.txt")
	var parsed []*benchfmt.Result
	for r.Scan() {
		switch rec := r.Result().(type) {
		case *benchfmt.SyntaxError:
			t.Errorf("syntax error: %v", rec)
		case *benchfmt.Result:
			parsed = append(parsed, rec.Clone())
		}
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	if len(parsed) != len(ss) {
		t.Fatalf("parsed %d results; want %d\n%s", len(parsed), len(ss), buf.String())
	}
	first := parsed[0]
	for _, kv := range [][2]string{{"goos", "linux"}, {"goarch", "amd64"}, {"pkg", results.BenchPkg}, {"cpu", "Test CPU"}} {
		if got := first.GetConfig(kv[0]); got != kv[1] {
			t.Errorf("config %s = %q; want %q", kv[0], got, kv[1])
		}
	}
	if got, want := first.Name.String(), "Lockbench/strategy=nolock/scenario=base/fault=none/fencing=false"; got != want {
		t.Errorf("name = %q; want %q", got, want)
	}
	if got, want := first.Iters, 1000; got != want {
		t.Errorf("iterations = %d; want %d (payments)", got, want)
	}
	// The reader tidies units: ns/op becomes sec/op and *-ns units become
	// *-sec, scaled.
	tests := []struct {
		unit string
		want float64
	}{
		{"sec/op", 10e9 / 1000 / 1e9},
		{"payments/s", ss[0].PaymentsPerSec},
		{"ops/s", ss[0].OpsPerSec},
		{"acquire-p50-sec", float64(ss[0].Latency["acquire"].P50) / 1e9},
		{"acquire-p99-sec", float64(ss[0].Latency["acquire"].P99) / 1e9},
		{"total-p99-sec", float64(ss[0].Latency["total"].P99) / 1e9},
		{"unsafe", float64(ss[0].UnsafeCount())},
		{"duplicates", 412},
		{"overdrafts", 3},
		{"lost-updates", 17},
		{"stale-accepted", 0},
		{"unprocessed", 0},
	}
	for _, tt := range tests {
		got, ok := first.Value(tt.unit)
		if !ok {
			t.Errorf("unit %q missing", tt.unit)
			continue
		}
		if d := got - tt.want; d > 1e-9*max(1, tt.want) || d < -1e-9*max(1, tt.want) {
			t.Errorf("%s = %v; want %v", tt.unit, got, tt.want)
		}
	}
	if got := r.Units().GetBetter("payments/s"); got != 1 {
		t.Errorf("payments/s better = %d; want +1 (higher)", got)
	}
	// Sweep points are distinct benchmarks, not repeats of one.
	names := map[string]bool{}
	for _, res := range parsed {
		n := res.Name.String()
		if names[n] {
			t.Errorf("benchmark %q appears twice", n)
		}
		names[n] = true
	}
	if !names["Lockbench/strategy=setnx/scenario=sweep/fault=none/fencing=false/rate=2000"] {
		t.Errorf("rate sweep point missing its rate: %v", names)
	}
	if !names["Lockbench/strategy=setnx/scenario=contention/fault=none/fencing=false/contenders=2"] {
		t.Errorf("contention point missing its contenders: %v", names)
	}
}
