package results

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"strings"
	"testing"
)

// A percentile is reported only with MinTailSamples samples beyond it:
// p50 from 20 samples, p90 from 100, p99 from 1,000, p99.9 from 10,000.
func TestLatencyHas(t *testing.T) {
	cases := []struct {
		count int64
		want  map[string]bool
	}{
		{0, map[string]bool{StatP50: false, StatMax: false, StatMean: false}},
		{19, map[string]bool{StatP50: false, StatMax: true, StatMean: true}},
		{20, map[string]bool{StatP50: true, StatP90: false}},
		{999, map[string]bool{StatP90: true, StatP99: false}},
		{1000, map[string]bool{StatP99: true, StatP999: false}},
		{9999, map[string]bool{StatP999: false}},
		{10000, map[string]bool{StatP999: true}},
	}
	for _, c := range cases {
		l := Latency{P50: 1, P90: 2, P99: 3, P999: 4, Max: 5, Mean: 2, Count: c.count}
		for stat, want := range c.want {
			if got := l.Has(stat); got != want {
				t.Errorf("count %d: Has(%s) = %v; want %v", c.count, stat, got, want)
			}
		}
	}
}

// A run with 2,000 acquires: its p99.9 (2 samples beyond it) is null in
// summary.json with the count beside it, an empty cell in summary.csv,
// missing from bench.txt and "—" on screen; its p99 is a number in all.
func TestUnreportedPercentile(t *testing.T) {
	s := Summary{Strategy: "setnx", Scenario: "base", Fault: "none", Payments: 1000, Processed: 1000, PaymentsPerSec: 900,
		Latency: map[string]Latency{"acquire": {P50: 200e3, P90: 400e3, P99: 1.5e6, P999: 9e6, Max: 12e6, Mean: 300e3, Count: 2000}}}

	var js bytes.Buffer
	if err := WriteJSON(&js, []Summary{s}); err != nil {
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
	if err := WriteCSV(&c, []Summary{s}); err != nil {
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
	if err := WriteBench(&bench, []Summary{s}, Host{}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(bench.String(), "acquire-p999-ns") || !strings.Contains(bench.String(), "1500000 acquire-p99-ns") {
		t.Errorf("bench.txt has p99.9 or lacks p99:\n%s", bench.String())
	}

	var tab bytes.Buffer
	if err := Table(&tab, []Summary{s}); err != nil {
		t.Fatal(err)
	}
	fields := strings.Fields(strings.Split(tab.String(), "\n")[1])
	if fields[2] != "200µs" || fields[3] != "1.50ms" || fields[4] != Dash {
		t.Errorf("table acq p50/p99/p99.9 = %v; want 200µs 1.50ms %s", fields[2:5], Dash)
	}

	// Read back, the summary says no more than the file.
	got, err := ReadJSON(&js)
	if err != nil {
		t.Fatal(err)
	}
	if l := got[0].Latency["acquire"]; l.P999 != 0 || l.Has(StatP999) || l.P99 != 1.5e6 {
		t.Errorf("read back acquire = %+v; want p99.9 0 and unreported, p99 kept", l)
	}
}
