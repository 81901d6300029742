package cli

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/lockbench/lockbench/internal/syncbuf"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/lockbench/lockbench/bench/metrics"
)

// scrape fetches url and parses it with the Prometheus text parser.
func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parsing the scrape of %s: %v", url, err)
	}
	return mfs
}

// sumOf is the sum of family name's series whose labels include want
// (counters and gauges; a histogram's sample count).
func sumOf(mfs map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	var sum float64
	for _, m := range mfs[name].GetMetric() {
		ok := true
		for _, lp := range m.GetLabel() {
			if v, in := want[lp.GetName()]; in && v != lp.GetValue() {
				ok = false
			}
		}
		if !ok {
			continue
		}
		switch {
		case m.Counter != nil:
			sum += m.GetCounter().GetValue()
		case m.Gauge != nil:
			sum += m.GetGauge().GetValue()
		case m.Histogram != nil:
			sum += float64(m.GetHistogram().GetSampleCount())
		}
	}
	return sum
}

var metricsLine = regexp.MustCompile(`metrics: (http://\S+)`)

// `lockbench run --metrics-addr` serves the run's metrics while it runs:
// two scrapes a second and a half apart parse, carry the run's labels,
// and show its counters and histograms rising.
func TestMetricsDuringRun(t *testing.T) {
	if testing.Short() {
		t.Skip("a 5 s run")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stderr syncbuf.Buffer
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, []string{"run", "--strategy", "mutex", "--duration", "5s", "--rate", "2000",
			"--metrics-addr", "127.0.0.1:0", "--out", t.TempDir()}, io.Discard, &stderr)
	}()
	var url string
	for deadline := time.Now().Add(30 * time.Second); url == "" && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if m := metricsLine.FindStringSubmatch(stderr.String()); m != nil {
			url = m[1]
		}
		select {
		case err := <-done:
			t.Fatalf("run ended before serving metrics: %v\n%s", err, stderr.String())
		default:
		}
	}
	if url == "" {
		t.Fatalf("no metrics URL on stderr:\n%s", stderr.String())
	}
	run := map[string]string{"strategy": "mutex", "scenario": "base", "fault": "none", "variant": "", "trial": "1"}
	offered := map[string]string{"outcome": metrics.OutcomeOffered}
	for k, v := range run {
		offered[k] = v
	}
	// Wait for the first interval, then measure a second and a half.
	var first map[string]*dto.MetricFamily
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		first = scrape(t, url)
		if sumOf(first, metrics.AcquireSeconds, run) > 0 {
			break
		}
	}
	time.Sleep(1500 * time.Millisecond)
	second := scrape(t, url)
	for _, c := range []struct {
		name   string
		labels map[string]string
	}{
		{metrics.PaymentsTotal, offered},
		{metrics.DeliveriesTotal, run},
		{metrics.LockCyclesTotal, run},
		{metrics.AcquireSeconds, run},
		{metrics.TotalSeconds, run},
	} {
		a, b := sumOf(first, c.name, c.labels), sumOf(second, c.name, c.labels)
		if !(a > 0 && b > a) {
			t.Errorf("%s%v: %g, then %g 1.5 s later; want it rising from above 0", c.name, c.labels, a, b)
		}
	}
	if v := sumOf(second, metrics.RunActive, run); v != 1 {
		t.Errorf("%s = %g during the run; want 1", metrics.RunActive, v)
	}
	if err := <-done; err != nil {
		t.Fatalf("run: %v\n%s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), url) {
		t.Errorf("stderr does not name %s", url)
	}
}

// A malformed --metrics-addr is a usage error naming the flag.
func TestMetricsAddrUsage(t *testing.T) {
	for _, v := range []string{"9464", "localhost:http", "127.0.0.1:99999"} {
		var errb bytes.Buffer
		code := ExitCode(Run(context.Background(), []string{"run", "--metrics-addr", v}, io.Discard, &errb), &errb)
		if code != 2 || !strings.Contains(errb.String(), "-metrics-addr") {
			t.Errorf("--metrics-addr %s: exit %d, stderr %q; want 2 naming the flag", v, code, errb.String())
		}
	}
}
