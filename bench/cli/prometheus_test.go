package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockbench/lockbench/internal/syncbuf"
)

// The Grafana dashboard against a real Prometheus scraping a real run:
// Debian's prometheus (.ci/install-deps installs it) on loopback scrapes
// --metrics-addr every second while a fault run that produces errors is
// in progress, and every query of deploy/grafana/lockbench.json, its
// variables substituted as Grafana does, must return data.

const (
	// prometheusBin is where Debian's package puts the server.
	prometheusBin = "/usr/bin/prometheus"
	// scrapeInterval is the test's scrape interval, and rateInterval
	// what Grafana makes $__rate_interval of it: four intervals.
	scrapeInterval = time.Second
	rateInterval   = 4 * scrapeInterval
	// dashboardFile is the dashboard, from this package's directory.
	dashboardFile = "../../deploy/grafana/lockbench.json"
)

// dashboardVars is what each of the dashboard's variables becomes: the
// run-selecting ones "All" (their allValue, .*), the interval ones as
// Grafana computes them for a 1 s scrape interval.
var dashboardVars = map[string]string{
	"strategy":        ".*",
	"scenario":        ".*",
	"fault":           ".*",
	"__rate_interval": promDuration(rateInterval),
	"__interval":      promDuration(scrapeInterval),
}

func promDuration(d time.Duration) string { return strconv.Itoa(int(d/time.Second)) + "s" }

// varRef matches a Grafana variable reference: $name, ${name} or
// ${name:format}, [[name]].
var varRef = regexp.MustCompile(`\$\{(\w+)(?::\w+)?\}|\$(\w+)|\[\[(\w+)\]\]`)

// substitute replaces every variable reference in expr, or says which
// one the test does not know.
func substitute(expr string) (string, error) {
	var unknown []string
	out := varRef.ReplaceAllStringFunc(expr, func(ref string) string {
		m := varRef.FindStringSubmatch(ref)
		name := m[1] + m[2] + m[3]
		v, ok := dashboardVars[name]
		if !ok {
			unknown = append(unknown, ref)
			return ref
		}
		return v
	})
	if len(unknown) > 0 {
		return "", fmt.Errorf("unknown dashboard variables %v", unknown)
	}
	return out, nil
}

// dashQuery is one query of the dashboard: a panel's target, or a
// variable's label_values().
type dashQuery struct {
	panel   string // the panel's title, or "variable NAME"
	ref     string // the target's refId
	expr    string // substituted
	instant bool
	// label and match, for a label_values(match, label) variable.
	label, match string
}

func (q dashQuery) String() string {
	if q.label != "" {
		return fmt.Sprintf("%s: label_values(%s, %s)", q.panel, q.match, q.label)
	}
	return fmt.Sprintf("panel %q target %s: %s", q.panel, q.ref, q.expr)
}

// labelValues matches a variable's label_values(metric, label) query.
var labelValues = regexp.MustCompile(`^\s*label_values\(\s*([^,]+?)\s*,\s*(\w+)\s*\)\s*$`)

// dashboardQueries reads every query of the dashboard at path.
func dashboardQueries(t *testing.T, path string) []dashQuery {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	type target struct {
		RefID   string `json:"refId"`
		Expr    string `json:"expr"`
		Instant bool   `json:"instant"`
		Hide    bool   `json:"hide"`
	}
	type panel struct {
		Title   string   `json:"title"`
		Targets []target `json:"targets"`
		Panels  []panel  `json:"panels"` // a row's
	}
	var d struct {
		Panels     []panel `json:"panels"`
		Templating struct {
			List []struct {
				Name  string          `json:"name"`
				Type  string          `json:"type"`
				Query json.RawMessage `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var qs []dashQuery
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			walk(p.Panels)
			for _, tg := range p.Targets {
				if tg.Hide || tg.Expr == "" {
					continue
				}
				expr, err := substitute(tg.Expr)
				if err != nil {
					t.Fatalf("panel %q target %s: %v", p.Title, tg.RefID, err)
				}
				qs = append(qs, dashQuery{panel: p.Title, ref: tg.RefID, expr: expr, instant: tg.Instant})
			}
		}
	}
	walk(d.Panels)
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		// The query is an object (Grafana 10) or a string (older).
		var q struct {
			Query string `json:"query"`
		}
		if err := json.Unmarshal(v.Query, &q); err != nil {
			_ = json.Unmarshal(v.Query, &q.Query)
		}
		m := labelValues.FindStringSubmatch(q.Query)
		if m == nil {
			t.Fatalf("variable %s: query %q is not label_values(metric, label)", v.Name, q.Query)
		}
		qs = append(qs, dashQuery{panel: "variable " + v.Name, match: m[1], label: m[2]})
	}
	if len(qs) == 0 {
		t.Fatalf("%s: no queries", path)
	}
	return qs
}

// prometheus is a Prometheus server the test started.
type prometheus struct {
	url string
	log *syncbuf.Buffer
}

// startPrometheus starts bin on a free loopback port, in its own
// temporary directory, scraping target every scrapeInterval, and waits
// (bounded) until it is ready; the test's end kills it.
func startPrometheus(t *testing.T, bin, target string) *prometheus {
	t.Helper()
	dir := t.TempDir()
	conf := filepath.Join(dir, "prometheus.yml")
	iv := promDuration(scrapeInterval)
	if err := os.WriteFile(conf, []byte(fmt.Sprintf(`global:
  scrape_interval: %[1]s
  scrape_timeout: %[1]s
  evaluation_interval: %[1]s
scrape_configs:
  - job_name: lockbench
    metrics_path: /metrics
    static_configs:
      - targets: ['%[2]s']
`, iv, target)), 0o644); err != nil {
		t.Fatal(err)
	}
	// A free port: taken by the kernel, then freed for Prometheus. Should
	// another process take it meanwhile, Prometheus fails to start and
	// says so in its log, which the failure shows.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	p := &prometheus{url: "http://" + addr, log: &syncbuf.Buffer{}}
	cmd := exec.Command(bin,
		"--config.file="+conf,
		"--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr,
		"--log.level=warn")
	cmd.Stdout, cmd.Stderr = p.log, p.log
	// Killed with the test binary too, should it die first.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", bin, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill() // by pid: this test's own child
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			t.Errorf("prometheus (pid %d) not reaped 10 s after SIGKILL", cmd.Process.Pid)
		}
	})
	client := &http.Client{Timeout: 2 * time.Second}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		select {
		case <-exited:
			t.Fatalf("prometheus exited before it was ready:\n%s", p.log)
		default:
		}
		if resp, err := client.Get(p.url + "/-/ready"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("prometheus not ready within 30 s:\n%s", p.log)
		}
	}
}

// apiResult is the data of a Prometheus API answer: a query's vector or
// matrix, or a list of label values.
type apiResult struct {
	Status    string          `json:"status"`
	Error     string          `json:"error"`
	ErrorType string          `json:"errorType"`
	Data      json.RawMessage `json:"data"`
}

// get calls the HTTP API at path with params.
func (p *prometheus) get(ctx context.Context, path string, params url.Values) (json.RawMessage, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.url+path+"?"+params.Encode(), nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	var r apiResult
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %s: %.200s", path, resp.Status, b)
	}
	if r.Status != "success" {
		return nil, fmt.Errorf("%s: %s: %s", path, r.ErrorType, r.Error)
	}
	return r.Data, nil
}

// errQueryFailed marks a query Prometheus refused: no wait mends it.
var errQueryFailed = errors.New("query refused")

// points runs q as Grafana would at now (a range query over the last
// window, or an instant query) and counts the points it returned that are
// numbers (NaN, a histogram without observations, draws nothing); for a
// variable, the label values.
func (p *prometheus) points(ctx context.Context, q dashQuery, now time.Time, window time.Duration) (int, error) {
	ts := func(t time.Time) string { return strconv.FormatFloat(float64(t.UnixMilli())/1000, 'f', 3, 64) }
	if q.label != "" {
		data, err := p.get(ctx, "/api/v1/label/"+q.label+"/values", url.Values{
			"match[]": {q.match}, "start": {ts(now.Add(-window))}, "end": {ts(now)}})
		if err != nil {
			return 0, fmt.Errorf("%w: %v", errQueryFailed, err)
		}
		var vals []string
		err = json.Unmarshal(data, &vals)
		return len(vals), err
	}
	path, params := "/api/v1/query_range", url.Values{"query": {q.expr},
		"start": {ts(now.Add(-window))}, "end": {ts(now)}, "step": {promDuration(scrapeInterval)}}
	if q.instant {
		path, params = "/api/v1/query", url.Values{"query": {q.expr}, "time": {ts(now)}}
	}
	data, err := p.get(ctx, path, params)
	if err != nil {
		return 0, fmt.Errorf("%w: %v", errQueryFailed, err)
	}
	var res struct {
		Result []struct {
			Value  [2]any   `json:"value"`
			Values [][2]any `json:"values"`
		} `json:"result"`
	}
	if err := json.Unmarshal(data, &res); err != nil {
		return 0, err
	}
	n := 0
	for _, s := range res.Result {
		vs := s.Values
		if q.instant {
			vs = [][2]any{s.Value}
		}
		for _, v := range vs {
			str, _ := v[1].(string)
			if f, err := strconv.ParseFloat(str, 64); err == nil && !math.IsNaN(f) {
				n++
			}
		}
	}
	return n, nil
}

// findPrometheus is the server's path, or a skip (a fail under CI, whose
// .ci/install-deps installs it).
func findPrometheus(t *testing.T) string {
	t.Helper()
	if _, err := os.Stat(prometheusBin); err == nil {
		return prometheusBin
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("%s missing under CI: .ci/install-deps installs Debian's prometheus", prometheusBin)
	}
	t.Skipf("%s missing (Debian's prometheus; make deps installs it): the dashboard is not checked against a real Prometheus", prometheusBin)
	return ""
}

// Every query of the Grafana dashboard returns data from a real
// Prometheus scraping a real fault run while the fault is making errors:
// setnx with its Redis killed for 20 s, a third into the run.
func TestDashboardAgainstPrometheus(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Prometheus and Redis and runs a 40 s fault run (cut short once every panel has data)")
	}
	bin := findPrometheus(t)
	queries := dashboardQueries(t, dashboardFile)
	start := time.Now()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stderr syncbuf.Buffer
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, []string{"run", "--strategy", "setnx", "--fault", "kill-node:down=20s",
			"--duration", "40s", "--rate", "300",
			"--metrics-addr", "127.0.0.1:0", "--out", t.TempDir()}, io.Discard, &stderr)
	}()
	// However the test ends, the run is stopped and waited for (bounded).
	defer func() {
		cancel()
		select {
		case <-done:
		case <-time.After(60 * time.Second):
			t.Errorf("run not stopped 60 s after its cancel:\n%s", stderr.String())
		}
	}()
	var metricsURL string
	for deadline := time.Now().Add(30 * time.Second); metricsURL == ""; time.Sleep(50 * time.Millisecond) {
		if m := metricsLine.FindStringSubmatch(stderr.String()); m != nil {
			metricsURL = m[1]
		}
		select {
		case err := <-done:
			done <- err
			t.Fatalf("run ended before serving metrics: %v\n%s", err, stderr.String())
		default:
		}
		if metricsURL == "" && time.Now().After(deadline) {
			t.Fatalf("no metrics URL on stderr within 30 s:\n%s", stderr.String())
		}
	}
	u, err := url.Parse(metricsURL)
	if err != nil {
		t.Fatal(err)
	}
	prom := startPrometheus(t, bin, u.Host)
	t.Logf("prometheus ready %s into the test", time.Since(start).Round(time.Millisecond))

	// Every second, every query over the last ten seconds, until all have
	// data at once, or the run ends, or 90 s: the fault strikes after a
	// third of the run's payments and keeps Redis down for 20 s.
	const window = 10 * time.Second
	deadline := time.Now().Add(90 * time.Second)
	var empty []string
	seen := make([]bool, len(queries)) // had data in some round
	for round := 1; ; round++ {
		empty = empty[:0]
		qctx, qcancel := context.WithTimeout(ctx, 10*time.Second)
		now := time.Now()
		for i, q := range queries {
			n, err := prom.points(qctx, q, now, window)
			if errors.Is(err, errQueryFailed) {
				qcancel()
				t.Fatalf("%s: %v", q, err)
			}
			if err != nil || n == 0 {
				empty = append(empty, fmt.Sprintf("%s: no data (%v)", q, err))
			} else {
				seen[i] = true
			}
		}
		qcancel()
		if len(empty) == 0 {
			t.Logf("all %d queries had data in round %d, %s into the test", len(queries), round, time.Since(start).Round(time.Millisecond))
			break
		}
		runEnded := false
		select {
		case err := <-done:
			done <- err
			runEnded = true
		default:
		}
		if runEnded || time.Now().After(deadline) {
			// Name the queries that never had data; when each had some
			// but never all at once, the last round's empty ones.
			what := "never had data"
			var never []string
			for i, q := range queries {
				if !seen[i] {
					never = append(never, q.String())
				}
			}
			if len(never) == 0 {
				what, never = "had data, but never all at once; the last round's empty ones", empty
			}
			t.Fatalf("queries of %s that %s (run ended: %v):\n  %s\nrun's stderr:\n%s\nprometheus:\n%s",
				dashboardFile, what, runEnded, strings.Join(never, "\n  "), stderr.String(), prom.log)
		}
		time.Sleep(scrapeInterval)
	}
	// The errors panel had data, so the fault was striking: the run was
	// the fault run it was meant to be.
	if !strings.Contains(stderr.String(), "metrics: ") {
		t.Errorf("stderr does not name the metrics URL")
	}
}
