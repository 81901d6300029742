package results_test

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/lockbench/lockbench/results"
	"github.com/lockbench/lockbench/results/resultstest"
)

func TestJSONRoundTrip(t *testing.T) {
	ss := resultstest.Summaries(append(resultstest.BaseFixtures(0), resultstest.VerdictFixtures(false)...))
	var buf bytes.Buffer
	if err := results.WriteJSON(&buf, ss); err != nil {
		t.Fatal(err)
	}
	got, err := results.ReadJSON(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(ss) {
		t.Fatalf("got %d summaries; want %d", len(got), len(ss))
	}
	for i := range ss {
		want := results.Normalized(ss[i])
		if !reflect.DeepEqual(got[i], want) {
			t.Errorf("summary %d: got %+v; want %+v", i, got[i], want)
		}
	}
}

func TestJSONContract(t *testing.T) {
	// A summary with nil maps and no Finish: the file must still carry
	// every summary.json field, errors and latency as objects, and a verdict
	// that agrees with the counters.
	s := results.Summary{Strategy: "nolock", Scenario: "base", Fault: "none", Payments: 10, Processed: 10, Duplicates: 2}
	var buf bytes.Buffer
	if err := results.WriteJSON(&buf, []results.Summary{s}); err != nil {
		t.Fatal(err)
	}
	var raw []map[string]any
	if err := json.Unmarshal(buf.Bytes(), &raw); err != nil {
		t.Fatal(err)
	}
	for _, field := range []string{"strategy", "scenario", "fault", "fencing", "unsafe", "payments", "deliveries",
		"processed", "duplicates", "lost", "unprocessed", "overdrafts", "lost_updates", "overlaps",
		"stale_rejected", "stale_accepted", "not_acquired", "availability", "errors", "ops_per_sec",
		"payments_per_sec", "latency"} {
		if _, ok := raw[0][field]; !ok {
			t.Errorf("field %q missing from summary.json", field)
		}
	}
	if got, ok := raw[0]["errors"].(map[string]any); !ok || got == nil {
		t.Errorf("errors = %v; want an object", raw[0]["errors"])
	}
	lat, _ := raw[0]["latency"].(map[string]any)
	for _, p := range results.PhaseNames {
		if _, ok := lat[p]; !ok {
			t.Errorf("latency.%s missing", p)
		}
	}
	if got := raw[0]["unsafe"]; got != true {
		t.Errorf("unsafe = %v; want true (2 duplicates)", got)
	}
	if got := raw[0]["availability"]; got != 1.0 {
		t.Errorf("availability = %v; want 1", got)
	}
	if !strings.HasPrefix(buf.String(), "[\n  {") {
		t.Errorf("summary.json is not an indented array: %.20q", buf.String())
	}
}

func TestCSVGolden(t *testing.T) {
	ss := resultstest.Summaries(append(resultstest.BaseFixtures(0), resultstest.VerdictFixtures(false)...))
	var buf bytes.Buffer
	if err := results.WriteCSV(&buf, ss); err != nil {
		t.Fatal(err)
	}
	resultstest.Golden(t, "summary.golden.csv", buf.Bytes())
}

func TestCSVColumns(t *testing.T) {
	ss := resultstest.Summaries(resultstest.BaseFixtures(0))
	var buf bytes.Buffer
	if err := results.WriteCSV(&buf, ss); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&buf).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(rows), len(ss)+1; got != want {
		t.Fatalf("got %d rows; want %d", got, want)
	}
	col := map[string]int{}
	for i, name := range rows[0] {
		if _, dup := col[name]; dup {
			t.Errorf("column %q appears twice", name)
		}
		col[name] = i
	}
	if col["strategy"] != 0 {
		t.Errorf("strategy is column %d; want 0", col["strategy"])
	}
	tests := []struct {
		row    int // index into ss
		column string
		want   string
		why    string
		next   string // a column that must come after column
	}{
		{0, "strategy", "nolock", "first column names the strategy", ""},
		{0, "duplicates", "412", "counters are copied", "unprocessed"},
		{0, "unsafe", "true", "derived verdict", "payments"},
		{2, "unsafe", "false", "setnx without fault is safe", ""},
		{0, "acquire_p50_ns", strconv.FormatInt(ss[0].Latency["acquire"].P50, 10), "latency in ns", "errors_total"},
		{0, "total_max_ns", strconv.FormatInt(ss[0].Latency["total"].Max, 10), "last of the distribution", "acquire_mean_ns"},
		{0, "total_count", strconv.FormatInt(ss[0].Latency["total"].Count, 10), "last latency column", "errors_total"},
		{6, "errors_serialization", "2", "unknown error classes get a column", ""},
		{6, "errors_other", "3", "known classes keep their name", "errors_serialization"},
		{6, "errors_total", "6", "sum of the classes", "errors_timeout"},
		{4, "errors_timeout", "2", "", "errors_refused"},
		{0, "errors_timeout", "0", "known classes always have a column", ""},
	}
	for _, tt := range tests {
		i, ok := col[tt.column]
		if !ok {
			t.Errorf("column %q missing (%s)", tt.column, tt.why)
			continue
		}
		if got := rows[tt.row+1][i]; got != tt.want {
			t.Errorf("row %d %s = %q; want %q (%s)", tt.row, tt.column, got, tt.want, tt.why)
		}
		if tt.next != "" && col[tt.next] <= i {
			t.Errorf("column %q at %d; want it before %q at %d", tt.column, i, tt.next, col[tt.next])
		}
	}
}
