package metrics

import (
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/lockbench/lockbench/loadgen"
	"github.com/lockbench/lockbench/loadgen/store"
	"github.com/lockbench/lockbench/results"
)

var testLabels = Labels{Strategy: "setnx", Scenario: "base", Fault: "none", Variant: "", Trial: "1"}

// scrapeText fetches h's metrics in the text format and parses them with
// the Prometheus text parser.
func scrapeText(t *testing.T, h http.Handler) map[string]*dto.MetricFamily {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", Path, nil))
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(rec.Body)
	if err != nil {
		t.Fatalf("parsing the scrape: %v", err)
	}
	return mfs
}

// value is the value of the series of family name with the labels
// testLabels plus extra (name, value pairs); ok is false without one.
func value(mfs map[string]*dto.MetricFamily, name string, extra ...string) (float64, bool) {
	want := map[string]string{}
	for i, n := range LabelNames {
		want[n] = testLabels.values()[i]
	}
	for i := 0; i+1 < len(extra); i += 2 {
		want[extra[i]] = extra[i+1]
	}
	mf := mfs[name]
	if mf == nil {
		return 0, false
	}
	for _, m := range mf.GetMetric() {
		got := map[string]string{}
		for _, lp := range m.GetLabel() {
			got[lp.GetName()] = lp.GetValue()
		}
		if len(got) != len(want) {
			continue
		}
		same := true
		for k, v := range want {
			same = same && got[k] == v
		}
		if !same {
			continue
		}
		switch {
		case m.Counter != nil:
			return m.GetCounter().GetValue(), true
		case m.Gauge != nil:
			return m.GetGauge().GetValue(), true
		case m.Histogram != nil:
			return float64(m.GetHistogram().GetSampleCount()), true
		}
	}
	return 0, false
}

// intervalOf is an interval whose acquire and total histograms hold vs.
func intervalOf(vs ...time.Duration) results.Interval {
	iv := results.Interval{EndNs: int64(time.Second), Hists: results.NewPhaseSet()}
	for _, v := range vs {
		_ = iv.Hists[results.Acquire].RecordValue(int64(v))
		_ = iv.Hists[results.Total].RecordValue(int64(2 * v))
	}
	return iv
}

// A run's counters follow Progress (what its counts grew by, never
// down), its gauges the store's latest counts, and its histograms every
// value of every interval, in seconds.
func TestRun(t *testing.T) {
	e := New()
	r := e.Run(testLabels)
	mfs := scrapeText(t, e.Handler())
	// Before any progress every counter is there, at zero.
	for _, c := range []struct{ name, k, v string }{
		{PaymentsTotal, "outcome", OutcomeOffered}, {LockCyclesTotal, "outcome", OutcomeNotAcquired},
		{ErrorsTotal, "class", loadgen.ErrClassTimeout}, {NotAcquiredTotal, "", ""},
	} {
		extra := []string{c.k, c.v}
		if c.k == "" {
			extra = nil
		}
		if v, ok := value(mfs, c.name, extra...); !ok || v != 0 {
			t.Errorf("%s %v before any progress: %g (present %v); want 0", c.name, extra, v, ok)
		}
	}
	if v, _ := value(mfs, RunActive); v != 1 {
		t.Errorf("%s while running = %g; want 1", RunActive, v)
	}

	p := loadgen.Progress{Offered: 100, Cycles: loadgen.Snapshot{Deliveries: 200, Acquired: 190, NotAcquired: 7},
		Store: store.Counts{Processed: 95, Duplicates: 3, Overlaps: 4}}
	r.Progress(p)
	p.Offered, p.Cycles.Acquired, p.Store.Processed, p.Store.Duplicates = 250, 480, 240, 5
	r.Progress(p)
	r.Interval(intervalOf(time.Millisecond, 1500*time.Microsecond, 40*time.Millisecond))
	r.Interval(intervalOf(3 * time.Second))
	r.End(results.VerdictUnknown)

	mfs = scrapeText(t, e.Handler())
	cases := []struct {
		name  string
		extra []string
		want  float64
	}{
		// Counters: the last counts, added up in steps.
		{PaymentsTotal, []string{"outcome", OutcomeOffered}, 250},
		{PaymentsTotal, []string{"outcome", OutcomeProcessed}, 240},
		{DeliveriesTotal, nil, 200},
		{LockCyclesTotal, []string{"outcome", OutcomeAcquired}, 480},
		{LockCyclesTotal, []string{"outcome", OutcomeNotAcquired}, 7},
		{NotAcquiredTotal, nil, 7},
		// Gauges: the store's latest judgement.
		{UnsafeOutcomes, []string{"kind", "duplicates"}, 5},
		{UnsafeOutcomes, []string{"kind", "lost"}, 0},
		{LockViolations, []string{"kind", "overlaps"}, 4},
		{RunActive, nil, 0},
		// Histograms: one observation per value recorded.
		{AcquireSeconds, nil, 4},
		{TotalSeconds, nil, 4},
	}
	for _, c := range cases {
		if got, ok := value(mfs, c.name, c.extra...); !ok || got != c.want {
			t.Errorf("%s %v = %g (present %v); want %g", c.name, c.extra, got, ok, c.want)
		}
	}
	// The values land in the right buckets, in seconds: 1ms and 1.5ms at
	// or under 2.5ms, 40ms under 50ms, 3s under 5s.
	h := mfs[AcquireSeconds].GetMetric()[0].GetHistogram()
	for _, b := range h.GetBucket() {
		want := map[float64]uint64{0.001: 1, 0.0025: 2, 0.05: 3, 2.5: 3, 5: 4}[b.GetUpperBound()]
		if want > 0 && b.GetCumulativeCount() != want {
			t.Errorf("bucket le=%g holds %d; want %d", b.GetUpperBound(), b.GetCumulativeCount(), want)
		}
	}
	if s := h.GetSampleSum(); s < 3.04 || s > 3.05 {
		t.Errorf("acquire sum = %gs; want 3.0425s", s)
	}
}

// A scraper that asks for protobuf gets native histograms as well as the
// classic buckets.
func TestNativeHistograms(t *testing.T) {
	e := New()
	r := e.Run(testLabels)
	r.Interval(intervalOf(time.Millisecond, 10*time.Millisecond, 100*time.Millisecond))
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("GET", Path, nil)
	req.Header.Set("Accept", string(expfmt.NewFormat(expfmt.TypeProtoDelim)))
	e.Handler().ServeHTTP(rec, req)
	dec := expfmt.NewDecoder(rec.Body, expfmt.NewFormat(expfmt.TypeProtoDelim))
	found := false
	for {
		var mf dto.MetricFamily
		if err := dec.Decode(&mf); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if mf.GetName() != AcquireSeconds {
			continue
		}
		h := mf.GetMetric()[0].GetHistogram()
		found = true
		if len(h.GetPositiveSpan()) == 0 || h.GetSchema() == 0 && h.GetZeroThreshold() == 0 {
			t.Errorf("%s has no native buckets: schema %d, spans %v", AcquireSeconds, h.GetSchema(), h.GetPositiveSpan())
		}
		if len(h.GetBucket()) != len(LatencyBuckets) {
			t.Errorf("%s has %d classic buckets; want %d", AcquireSeconds, len(h.GetBucket()), len(LatencyBuckets))
		}
	}
	if !found {
		t.Errorf("no %s in the protobuf scrape", AcquireSeconds)
	}
}

// Without a host the server listens on loopback only.
func TestListenLoopback(t *testing.T) {
	s, err := Listen(":0", New())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	host, _, _ := net.SplitHostPort(s.Addr())
	if host != "127.0.0.1" {
		t.Errorf("listening on %s; want 127.0.0.1", s.Addr())
	}
	resp, err := http.Get(s.URL())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET %s: %s", s.URL(), resp.Status)
	}
	if err := s.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
}

var (
	metricName = regexp.MustCompile(`\blockbench_[a-z0-9_]+`)
	byLabels   = regexp.MustCompile(`\bby \(([^)]*)\)`)
	matchers   = regexp.MustCompile(`\b([a-z_]+)\s*(=~|!~|!=|=)\s*"`)
	// labelValues is a template variable's query: label_values(metric, label).
	labelValues = regexp.MustCompile(`label_values\((lockbench_[a-z0-9_]+), *([a-z_]+)\)`)
)

// The Grafana dashboard (deploy/grafana/lockbench.json) asks only for
// metrics and labels the endpoint serves, and shows every metric it
// serves.
func TestDashboard(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "deploy", "grafana", "lockbench.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash map[string]any
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatalf("lockbench.json is not JSON: %v", err)
	}
	var exprs []string
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				if s, ok := x.(string); ok && (k == "expr" || k == "definition") {
					exprs = append(exprs, s)
				}
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(dash)
	if len(exprs) < 10 {
		t.Fatalf("the dashboard has %d queries; want its panels' (10 or more)", len(exprs))
	}

	// What the endpoint serves, from a scrape of a run with every kind of
	// series.
	e := New()
	r := e.Run(testLabels)
	r.Progress(loadgen.Progress{Offered: 1, Cycles: loadgen.Snapshot{Deliveries: 1, Acquired: 1}})
	r.Interval(intervalOf(time.Millisecond))
	served := map[string]bool{}
	labels := map[string]bool{"le": true}
	for name, mf := range scrapeText(t, e.Handler()) {
		served[name] = true
		if mf.GetType() == dto.MetricType_HISTOGRAM {
			for _, s := range []string{"_bucket", "_sum", "_count"} {
				served[name+s] = true
			}
		}
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				labels[lp.GetName()] = true
			}
		}
	}
	used := map[string]bool{}
	for _, q := range exprs {
		for _, name := range metricName.FindAllString(q, -1) {
			if !served[name] {
				t.Errorf("the dashboard queries %s, which the endpoint does not serve (query %q)", name, q)
			}
			used[strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(name, "_bucket"), "_sum"), "_count")] = true
		}
		var names []string
		for _, m := range byLabels.FindAllStringSubmatch(q, -1) {
			for _, l := range strings.Split(m[1], ",") {
				names = append(names, strings.TrimSpace(l))
			}
		}
		for _, m := range matchers.FindAllStringSubmatch(q, -1) {
			names = append(names, m[1])
		}
		for _, m := range labelValues.FindAllStringSubmatch(q, -1) {
			names = append(names, m[2])
		}
		for _, l := range names {
			if !labels[l] {
				t.Errorf("the dashboard uses label %q, which no served metric has (query %q)", l, q)
			}
		}
	}
	var unused []string
	for name, mf := range scrapeText(t, e.Handler()) {
		if !used[name] {
			unused = append(unused, name+" ("+mf.GetType().String()+")")
		}
	}
	sort.Strings(unused)
	if len(unused) > 0 {
		t.Errorf("the dashboard shows none of %v", unused)
	}
	if !slices.Contains(exprs, "label_values(lockbench_run_active, strategy)") {
		t.Error("the dashboard has no strategy variable")
	}
}
