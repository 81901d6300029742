package report

import (
	"bytes"
	"encoding/xml"
	"image/png"
	"strings"
	"testing"

	"github.com/lockbench/lockbench/results"
	"github.com/lockbench/lockbench/results/resultstest"
	"github.com/lockbench/lockbench/strategies"
)

func TestCharts(t *testing.T) {
	base := resultstest.MakeRuns(resultstest.BaseFixtures(0))
	sweeps := resultstest.Summaries(resultstest.SweepFixtures())
	verdictRuns := resultstest.MakeRuns(resultstest.VerdictFixtures(true))
	tests := []struct {
		name     string
		build    func() (*Chart, error)
		wantName string
		minH     int // PNG height in pixels, at least
	}{
		{"spectrum acquire", func() (*Chart, error) { return LatencySpectrum(base, results.Acquire) }, "latency-spectrum-acquire", 500},
		{"spectrum total", func() (*Chart, error) { return LatencySpectrum(base, results.Total) }, "latency-spectrum-total", 500},
		{"contention", func() (*Chart, error) {
			return ThroughputContention(sweepSummaries(sweeps, results.ScenarioContention))
		}, "throughput-contention", 500},
		{"rate sweep", func() (*Chart, error) { return LatencyThroughput(sweepSummaries(sweeps, results.ScenarioSweep)) }, "latency-throughput", 500},
		{"safety grid", func() (*Chart, error) { return SafetyGrid(results.SummariesOf(verdictRuns)) }, "safety-grid", 300},
		{"timeline", func() (*Chart, error) {
			_, byFault := faultRunsWithIntervals(verdictRuns)
			return LatencyTimeline(byFault["pause"], "pause")
		}, "latency-timeline-pause", 500},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ch, err := tt.build()
			if err != nil {
				t.Fatal(err)
			}
			if ch == nil {
				t.Fatal("got no chart; want one")
			}
			if ch.Name != tt.wantName {
				t.Errorf("Name = %q; want %q", ch.Name, tt.wantName)
			}
			if ch.Title == "" || ch.Caption == "" {
				t.Errorf("Title %q, Caption %q; want both set", ch.Title, ch.Caption)
			}
			var pngBuf, svgBuf bytes.Buffer
			if err := ch.WritePNG(&pngBuf); err != nil {
				t.Fatal(err)
			}
			cfg, err := png.DecodeConfig(bytes.NewReader(pngBuf.Bytes()))
			if err != nil {
				t.Fatalf("PNG does not decode: %v", err)
			}
			if cfg.Width != ChartWidthPx || cfg.Height < tt.minH || cfg.Height > 1200 {
				t.Errorf("PNG is %d×%d px; want %d wide and %d–1200 high", cfg.Width, cfg.Height, ChartWidthPx, tt.minH)
			}
			if n := pngBuf.Len(); n < 10_000 || n > 2_000_000 {
				t.Errorf("PNG is %d bytes; want 10 kB–2 MB", n)
			}
			if err := ch.WriteSVG(&svgBuf); err != nil {
				t.Fatal(err)
			}
			var doc struct {
				XMLName xml.Name
				Width   string `xml:"width,attr"`
			}
			if err := xml.Unmarshal(svgBuf.Bytes(), &doc); err != nil {
				t.Fatalf("SVG is not XML: %v", err)
			}
			if doc.XMLName.Local != "svg" {
				t.Errorf("SVG root is <%s>; want <svg>", doc.XMLName.Local)
			}
			if !strings.Contains(svgBuf.String(), ch.plot.Title.Text) {
				t.Errorf("SVG lacks the title %q", ch.plot.Title.Text)
			}
		})
	}
}

func TestChartsEmptyInput(t *testing.T) {
	tests := []struct {
		name  string
		build func() (*Chart, error)
	}{
		{"spectrum", func() (*Chart, error) { return LatencySpectrum(nil, results.Total) }},
		{"spectrum without histograms", func() (*Chart, error) {
			return LatencySpectrum([]results.Run{{Summary: results.Summary{Strategy: "setnx"}}}, results.Total)
		}},
		{"contention", func() (*Chart, error) { return ThroughputContention(nil) }},
		{"rate sweep", func() (*Chart, error) { return LatencyThroughput(nil) }},
		{"safety grid", func() (*Chart, error) { return SafetyGrid(nil) }},
		{"timeline", func() (*Chart, error) { return LatencyTimeline(nil, "pause") }},
	}
	for _, tt := range tests {
		ch, err := tt.build()
		if err != nil || ch != nil {
			t.Errorf("%s: got %v, %v; want nil chart, nil error", tt.name, ch, err)
		}
	}
}

func TestBuildChartsMissing(t *testing.T) {
	// Only base runs: no sweep, no fault. The report must say which charts
	// were not drawn and why.
	cs, err := BuildCharts(resultstest.MakeRuns(resultstest.BaseFixtures(0)[:2]))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, ch := range cs.Charts {
		names = append(names, ch.Name)
	}
	if got, want := strings.Join(names, ","), "latency-spectrum-acquire,latency-spectrum-total"; got != want {
		t.Errorf("charts = %s; want %s", got, want)
	}
	missing := strings.Join(cs.Missing, "\n")
	for _, want := range []string{"Throughput against contention", "Latency against throughput", "Safety grid", "Latency timeline"} {
		if !strings.Contains(missing, want) {
			t.Errorf("Missing lacks %q:\n%s", want, missing)
		}
	}
}

func TestStrategyColors(t *testing.T) {
	// One colour per strategy, every strategy distinct, and unknown
	// strategies stable from call to call.
	seen := map[[3]uint8]string{}
	for _, s := range strategies.Builtin() {
		c := StrategyColor(s)
		k := [3]uint8{c.R, c.G, c.B}
		if other, dup := seen[k]; dup {
			t.Errorf("%s and %s share colour %v", s, other, c)
		}
		seen[k] = s
	}
	if a, b := StrategyColor("consul"), StrategyColor("consul"); a != b {
		t.Errorf("unknown strategy colour changed: %v then %v", a, b)
	}
}
