package report

import (
	"bytes"
	"encoding/json"
	"html/template"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/lockbench/lockbench/results"
	"github.com/lockbench/lockbench/results/resultstest"
)

// htmlFixtureRuns are runs for report.html: a base scenario, a contention
// and a rate sweep of three trials each (their throughput and latency a
// few percent apart, so every point has an interval), and verdict runs
// with a pause whose intervals make a timeline.
func htmlFixtureRuns() []results.Run {
	fs := resultstest.BaseFixtures(0)
	fs = append(fs, resultstest.VerdictFixtures(true)...)
	for trial := range 3 {
		scale := 1 + 0.06*float64(trial-1)
		for _, f := range resultstest.SweepFixtures() {
			f.AcquireNs *= scale
			f.PPS *= scale
			fs = append(fs, f)
		}
	}
	return resultstest.MakeRuns(fs)
}

// renderHTML writes report.html for runs, with the charts BuildCharts
// makes of them.
func renderHTML(t *testing.T, runs []results.Run, meta results.Meta) ([]byte, ChartSet) {
	t.Helper()
	runs = results.NormalizedRuns(runs)
	cs, err := BuildCharts(runs)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteHTML(&b, runs, meta, cs, results.StandardLayout); err != nil {
		t.Fatal(err)
	}
	return b.Bytes(), cs
}

var dataScript = regexp.MustCompile(`(?s)<script id="lockbench-data" type="application/json">(.*?)</script>`)

// pageData is the chart data embedded in a report.html.
func pageData(t *testing.T, page []byte) htmlDataJSON {
	t.Helper()
	m := dataScript.FindSubmatch(page)
	if m == nil {
		t.Fatal("report.html has no lockbench-data script")
	}
	var d htmlDataJSON
	if err := json.Unmarshal(m[1], &d); err != nil {
		t.Fatalf("lockbench-data is not JSON: %v", err)
	}
	return d
}

// htmlDataJSON is htmlData as the page reads it.
type htmlDataJSON struct {
	Charts []struct {
		Name   string `json:"name"`
		Kind   string `json:"kind"`
		Series []struct {
			Label    string     `json:"label"`
			Strategy string     `json:"strategy"`
			Color    string     `json:"color"`
			X        []*float64 `json:"x"`
			Y        []*float64 `json:"y"`
			YLo      []*float64 `json:"ylo"`
		} `json:"series"`
	} `json:"charts"`
}

// report.html stands alone: it loads nothing (no script, stylesheet or
// image from elsewhere), embeds uPlot, holds every chart BuildCharts drew
// with a series per strategy in its colour, and is the same bytes for the
// same input.
func TestWriteHTML(t *testing.T) {
	runs := htmlFixtureRuns()
	page, cs := renderHTML(t, runs, resultstest.TestMeta())
	again, _ := renderHTML(t, runs, resultstest.TestMeta())
	if !bytes.Equal(page, again) {
		t.Error("two renderings of the same runs differ")
	}
	for _, re := range []string{`<script[^>]+src=`, `<link\b`, `<img[^>]+src="(https?:)?//`, `@import`, `url\((https?:)?//`} {
		if loc := regexp.MustCompile(re).FindIndex(page); loc != nil {
			t.Errorf("report.html loads something from elsewhere: %q", page[loc[0]:min(loc[1]+60, len(page))])
		}
	}
	if !bytes.Contains(page, []byte(uplotJS[:200])) {
		t.Error("report.html does not embed uPlot")
	}
	d := pageData(t, page)
	var names []string
	for _, ch := range cs.Charts {
		names = append(names, ch.Name)
	}
	var got []string
	for _, ch := range d.Charts {
		got = append(got, ch.Name)
	}
	// Every chart but the safety grid (a table in the page) is a plot.
	want := slices.DeleteFunc(slices.Clone(names), func(n string) bool { return n == "safety-grid" })
	if !slices.Equal(got, want) {
		t.Errorf("interactive charts = %v; want %v", got, want)
	}
	if !bytes.Contains(page, []byte(`data-chart="safety-grid" data-kind="grid"`)) {
		t.Error("the safety grid is missing")
	}
	for _, ch := range d.Charts {
		if len(ch.Series) == 0 {
			t.Errorf("%s: no series", ch.Name)
		}
		for _, s := range ch.Series {
			if c := cssColor(s.Strategy); s.Color != c {
				t.Errorf("%s, %s: colour %s; want %s (StrategyColor)", ch.Name, s.Label, s.Color, c)
			}
			if len(s.X) == 0 || len(s.X) != len(s.Y) {
				t.Errorf("%s, %s: %d x and %d y values", ch.Name, s.Label, len(s.X), len(s.Y))
			}
			// The sweeps ran three trials: every point has an interval.
			sweep := ch.Name == "throughput-contention" || ch.Name == "latency-throughput"
			if sweep && len(s.YLo) != len(s.Y) {
				t.Errorf("%s, %s: %d intervals for %d points; want one each", ch.Name, s.Label, len(s.YLo), len(s.Y))
			}
		}
	}
	if n := len(page); n > 2<<20 {
		t.Errorf("report.html is %d bytes; want under 2 MB", n)
	}
	for _, want := range []string{"<h2>Verdicts</h2>", `<tr class="unsafe">`, `class="num bad"`, "lockbench: test fixtures", "How to read the figures"} {
		if !bytes.Contains(page, []byte(want)) {
			t.Errorf("report.html lacks %q", want)
		}
	}
}

// An empty run directory still gets a page, saying so.
func TestWriteHTMLEmpty(t *testing.T) {
	var b bytes.Buffer
	if err := WriteHTML(&b, nil, results.Meta{}, ChartSet{}, results.StandardLayout); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "No run has finished yet.") {
		t.Errorf("empty report.html does not say there is nothing yet:\n%s", b.String())
	}
}

// report.md's Markdown reads back: a table cell for cell (escaped pipes
// included, an UNSAFE verdict and the counts that made it marked), and
// the paragraphs around it with their code and bold spans.
func TestHTMLBlocks(t *testing.T) {
	var b strings.Builder
	b.WriteString("Acquire latency by `outcome`, **all** trials <b>.\n\n")
	if err := mdTable(&b, []string{"a|b", "verdict", "duplicates", "overlaps"}, []bool{false, false, true, true},
		[][]string{{"x|y", "**UNSAFE**", "12", "3"}, {"z", "SAFE", "0", "0"}}); err != nil {
		t.Fatal(err)
	}
	b.WriteString("\nMedians over trials.\n")
	got := htmlBlocks(b.String())
	if len(got) != 3 || got[0].Table != nil || got[1].Table == nil || got[2].Table != nil {
		t.Fatalf("blocks = %+v; want a paragraph, a table and a paragraph", got)
	}
	if want := template.HTML("Acquire latency by <code>outcome</code>, <b>all</b> trials &lt;b&gt;."); got[0].Para != want {
		t.Errorf("paragraph = %q; want %q", got[0].Para, want)
	}
	tb := got[1].Table
	if want := []htmlColumn{{"a|b", false}, {"verdict", false}, {"duplicates", true}, {"overlaps", true}}; !slices.Equal(tb.Columns, want) {
		t.Errorf("columns = %v; want %v", tb.Columns, want)
	}
	want := []htmlRow{
		{Class: "unsafe", Cells: []htmlCell{{"x|y", ""}, {"UNSAFE", "bad"}, {"12", "num bad"}, {"3", "num"}}},
		{Cells: []htmlCell{{"z", ""}, {"SAFE", ""}, {"0", "num"}, {"0", "num"}}},
	}
	if !slices.EqualFunc(tb.Rows, want, func(a, b htmlRow) bool { return a.Class == b.Class && slices.Equal(a.Cells, b.Cells) }) {
		t.Errorf("rows = %+v; want %+v", tb.Rows, want)
	}
}

// report.html opens with the verdicts at a glance: its first section and
// first table is the safety grid, whose cells have their unsafe trials as
// k of N and their exposure, with a reading per strategy under it; the
// charts do not repeat it.
func TestWriteHTMLOpensWithGlance(t *testing.T) {
	var ss []results.Summary
	ss = append(ss, glanceTrials("setnx", results.FaultNone, false, 6, nil, 0)...)
	ss = append(ss, glanceTrials("setnx", "pause", false, 6, map[int]bool{2: true, 4: true, 5: true}, 200e6)...)
	runs := make([]results.Run, len(ss))
	for i, s := range ss {
		runs[i] = results.Run{Summary: s}
	}
	page, _ := renderHTML(t, runs, resultstest.TestMeta())
	html := string(page)
	first := strings.Index(html, "<table")
	if first < 0 {
		t.Fatal("report.html has no table")
	}
	if !strings.HasPrefix(html[first:], `<table class="grid">`) {
		t.Errorf("the first table is %q; want the safety grid", html[first:first+40])
	}
	glance, scenarios := strings.Index(html, `<section id="glance">`), strings.Index(html, `<section id="scenarios">`)
	if glance < 0 || scenarios < glance || first < glance || first > scenarios {
		t.Errorf("sections at %d (glance) and %d (scenarios), first table at %d; want the grid first, in the glance section", glance, scenarios, first)
	}
	for _, want := range []string{
		`<span class="v">UNSAFE</span><span class="sub">3 of 6 · 700ms</span>`,
		`<span class="v">SAFE</span><span class="sub">0 of 6</span>`,
		"<b>setnx</b>: unsafe under pause (3 of 6)</li>",
	} {
		if !strings.Contains(html[glance:scenarios], want) {
			t.Errorf("the verdicts at a glance lack %q", want)
		}
	}
	if n := strings.Count(html, `<table class="grid">`); n != 1 {
		t.Errorf("%d safety grids on the page; want 1", n)
	}
}
