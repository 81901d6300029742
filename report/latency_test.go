package report

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"strings"
	"testing"

	"github.com/lockbench/lockbench/results"
)

// A run with 2,000 acquires: its p99.9 (2 samples beyond it) is null in
// summary.json with the count beside it, an empty cell in summary.csv,
// missing from bench.txt and "—" on screen; its p99 is a number in all.
func TestUnreportedPercentile(t *testing.T) {
	s := results.Summary{Strategy: "setnx", Scenario: "base", Fault: "none", Payments: 1000, Processed: 1000, PaymentsPerSec: 900,
		Latency: map[string]results.Latency{"acquire": {P50: 200e3, P90: 400e3, P99: 1.5e6, P999: 9e6, Max: 12e6, Mean: 300e3, Count: 2000}}}

	var js bytes.Buffer
	if err := results.WriteJSON(&js, []results.Summary{s}); err != nil {
		t.Fatal(err)
	}
	var raw []struct {
		Latency map[string]map[string]any `json:"latency"`
	}
	if err := json.Unmarshal(js.Bytes(), &raw); err != nil {
		t.Fatal(err)
	}
	acq := raw[0].Latency["acquire"]
	if v, ok := acq["p999"]; !ok || v != nil {
		t.Errorf("summary.json acquire.p999 = %v (present %v); want null", v, ok)
	}
	if acq["p99"] != 1.5e6 || acq["count"] != 2000.0 {
		t.Errorf("summary.json acquire.p99 = %v, count %v; want 1500000 and 2000", acq["p99"], acq["count"])
	}
	for _, stat := range []string{"p50", "p90", "p99", "p999", "max", "mean"} {
		if v := raw[0].Latency["total"][stat]; v != nil {
			t.Errorf("summary.json total.%s = %v with no samples; want null", stat, v)
		}
	}

	var c bytes.Buffer
	if err := results.WriteCSV(&c, []results.Summary{s}); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&c).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	cell := map[string]string{}
	for i, name := range rows[0] {
		cell[name] = rows[1][i]
	}
	if cell["acquire_p999_ns"] != "" || cell["acquire_p99_ns"] != "1500000" {
		t.Errorf("summary.csv acquire p99.9 %q, p99 %q; want empty and 1500000", cell["acquire_p999_ns"], cell["acquire_p99_ns"])
	}

	var bench bytes.Buffer
	if err := results.WriteBench(&bench, []results.Summary{s}, results.Host{}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(bench.String(), "acquire-p999-ns") || !strings.Contains(bench.String(), "1500000 acquire-p99-ns") {
		t.Errorf("bench.txt has p99.9 or lacks p99:\n%s", bench.String())
	}

	var tab bytes.Buffer
	if err := Table(&tab, []results.Summary{s}); err != nil {
		t.Fatal(err)
	}
	fields := strings.Fields(strings.Split(tab.String(), "\n")[1])
	if fields[2] != "200µs" || fields[3] != "1.50ms" || fields[4] != results.Dash {
		t.Errorf("table acq p50/p99/p99.9 = %v; want 200µs 1.50ms %s", fields[2:5], results.Dash)
	}

	// Read back, the summary says no more than the file.
	got, err := results.ReadJSON(&js)
	if err != nil {
		t.Fatal(err)
	}
	if l := got[0].Latency["acquire"]; l.P999 != 0 || l.Has(results.StatP999) || l.P99 != 1.5e6 {
		t.Errorf("read back acquire = %+v; want p99.9 0 and unreported, p99 kept", l)
	}
}
