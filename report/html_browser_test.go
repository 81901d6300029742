package report

import (
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/lockbench/lockbench/results"
	"github.com/lockbench/lockbench/results/resultstest"
)

// EnvHTMLDir names a run directory whose report.html the browser test
// opens instead of the fixtures' (and whose screenshot -update saves for
// the README): LOCKBENCH_HTML_DIR=out/bench go test -run Browser -update.
const EnvHTMLDir = "LOCKBENCH_HTML_DIR"

// readmeScreenshot is where -update saves the browser test's screenshot
// for the README.
var readmeScreenshot = filepath.Join("..", "docs", "report-html.png")

// chromium returns the path of a Chromium or Chrome, or "".
func chromium() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// report.html works in a real browser, from disk and offline: no console
// error, no uncaught exception, no request beyond the file itself; every
// chart drew every series (pixels of its colour on the canvas, alone) with
// a legend entry per strategy; the first table is the safety grid, on the
// first screen; a legend click hides a series, a drag zooms
// the latency axis in and a double-click out again, hovering over a chart
// with trials shows their interval, a header click sorts its table. The
// screenshot is saved in the test's directory (and with -update for the
// README).
func TestReportHTMLInBrowser(t *testing.T) {
	bin := chromium()
	if bin == "" {
		t.Skip("no Chromium installed (apt-get install chromium, or .ci/install-deps)")
	}
	runs, meta := htmlFixtureRuns(), resultstest.TestMeta()
	if dir := os.Getenv(EnvHTMLDir); dir != "" {
		var err error
		if runs, meta, err = results.LoadDir(dir); err != nil {
			t.Fatal(err)
		}
	}
	page, cs := renderHTML(t, runs, meta)
	dir := t.TempDir()
	path := filepath.Join(dir, results.ReportHTMLFile)
	if err := os.WriteFile(path, page, 0o644); err != nil {
		t.Fatal(err)
	}
	want := pageData(t, page)

	var mu sync.Mutex
	var problems []string
	report := func(format string, args ...any) {
		mu.Lock()
		problems = append(problems, fmt.Sprintf(format, args...))
		mu.Unlock()
	}
	// The page's problems, also when a check below stops the test.
	defer func() {
		mu.Lock()
		defer mu.Unlock()
		for _, p := range problems {
			t.Error(p)
		}
	}()
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(bin), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.UserDataDir(filepath.Join(dir, "profile")), chromedp.WindowSize(1280, 1000),
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.Flag("force-device-scale-factor", "1"), chromedp.Flag("hide-scrollbars", true),
	)
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(alloc, chromedp.WithListener(func(ev any) {
		if r, ok := ev.(*network.EventRequestWillBeSent); ok && !strings.HasPrefix(r.Request.URL, "file://") &&
			!strings.HasPrefix(r.Request.URL, "data:") && !strings.HasPrefix(r.Request.URL, "about:") {
			report("the page requested %s", r.Request.URL)
		}
	}))
	defer cancel()
	// Start the browser outside the timeout: a timeout on the first Run
	// would stop the browser itself.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting %s: %v", bin, err)
	}
	messages := chromedp.Console(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.IsException() {
				report("console %s", m)
			}
		}
	}()
	step, cancelStep := context.WithTimeout(ctx, 60*time.Second)
	defer cancelStep()
	if err := chromedp.Do(step,
		chromedp.EmulateViewport(1280, 1000),
		chromedp.Navigate("file://"+path),
	); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(step, chromedp.Poll[bool]("window.lockbench && window.lockbench.ready", chromedp.WithPollingTimeout(20*time.Second))); err != nil {
		t.Fatalf("the page's script did not finish: %v", err)
	}

	// Every chart: its legend, and each series drawn on its own.
	type drawn struct {
		Name   string   `json:"name"`
		Kind   string   `json:"kind"`
		Legend []string `json:"legend"`
		Pixels []int    `json:"pixels"`
		Points []int    `json:"points"`
		Rows   []string `json:"rows"`
		Cells  int      `json:"cells"`
	}
	charts, err := chromedp.Run(step, chromedp.Evaluate[[]drawn](checkChartsJS, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]drawn{}
	for _, c := range charts {
		byName[c.Name] = c
	}
	for _, ch := range cs.Charts {
		got, ok := byName[ch.Name]
		if !ok {
			t.Errorf("chart %s: not on the page", ch.Name)
			continue
		}
		if got.Kind == "grid" {
			v := results.VerdictRuns(results.SummariesOf(results.NormalizedRuns(runs)))
			var strategies []string
			for _, k := range sortedKeys(v) {
				strategies = append(strategies, k.Strategy)
			}
			faults := map[string]bool{}
			for _, s := range v {
				faults[faultName(&s)] = true
			}
			if !slices.Equal(got.Rows, strategies) || got.Cells != len(strategies)*len(faults) {
				t.Errorf("safety grid: rows %v and %d cells; want %v and %d", got.Rows, got.Cells, strategies, len(strategies)*len(faults))
			}
			continue
		}
		var labels []string
		for _, wc := range want.Charts {
			if wc.Name == ch.Name {
				for _, s := range wc.Series {
					labels = append(labels, s.Label)
				}
			}
		}
		if !slices.Equal(got.Legend, labels) {
			t.Errorf("%s: legend %q; want %q", ch.Name, got.Legend, labels)
		}
		for i, l := range labels {
			if i >= len(got.Pixels) || got.Pixels[i] == 0 || got.Points[i] == 0 {
				t.Errorf("%s: series %q drew nothing (pixels %v, points %v)", ch.Name, l, got.Pixels, got.Points)
			}
		}
	}

	// The first screen answers the question: the first table on the page
	// is the safety grid, and it starts inside the window.
	if len(results.VerdictRuns(results.SummariesOf(runs))) > 0 {
		type first struct {
			Grid bool
			Top  float64
		}
		got, err := chromedp.Run(step, chromedp.Evaluate[first](`(() => { const t = document.querySelector("table");
			return {Grid: t.classList.contains("grid"), Top: t.getBoundingClientRect().top + window.scrollY}; })()`))
		if err != nil {
			t.Fatal(err)
		}
		if !got.Grid || got.Top > 1000 {
			t.Errorf("first table: safety grid %v, at %gpx; want the safety grid, within the first 1000px", got.Grid, got.Top)
		}
	}

	// Interactions on the first line chart: hide a series from the
	// legend, zoom with a drag and back with a double-click.
	first := ""
	for _, c := range charts {
		if c.Kind == "lines" {
			first = c.Name
			break
		}
	}
	if first != "" {
		testLegendAndZoom(t, step, first)
	}
	for _, wc := range want.Charts {
		if len(wc.Series) > 0 && len(wc.Series[0].YLo) > 0 {
			testHover(t, step, wc.Name)
			break
		}
	}
	testSort(t, step)

	shot, err := chromedp.Run(step, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "report-html.png"), shot, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s (%d bytes)", filepath.Join(dir, "report-html.png"), len(shot))
	if *resultstest.Update {
		// For the README: the charts, the cursor on the first so that its
		// legend shows values.
		readme, err := chromedp.Run(step, readmeShot(first))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(readmeScreenshot, readme, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	cancel()
	<-done
}

// checkChartsJS reports, for every chart on the page, its legend and, for
// each series alone (the others hidden), the pixels of its colour on the
// canvas and its points in the data.
const checkChartsJS = `(async () => {
  const near = (d, i, rgb) => Math.abs(d[i]-rgb[0]) + Math.abs(d[i+1]-rgb[1]) + Math.abs(d[i+2]-rgb[2]) < 24 && d[i+3] > 200;
  const frame = () => new Promise(r => requestAnimationFrame(() => setTimeout(r, 0)));
  const out = [];
  for (const c of window.lockbench.charts) {
    if (c.kind === "grid") {
      out.push({name: c.name, kind: "grid", rows: c.rows, cells: c.el.querySelectorAll("td.cell").length});
      continue;
    }
    const u = c.plot;
    const legend = [...c.el.querySelectorAll(".u-legend .u-series")].slice(1).map(tr => tr.querySelector(".u-label").textContent);
    const pixels = [], points = [];
    for (let i = 1; i < u.series.length; i++) {
      for (let j = 1; j < u.series.length; j++) u.setSeries(j, {show: j === i});
      await frame();
      const cv = u.ctx.canvas, d = u.ctx.getImageData(0, 0, cv.width, cv.height).data;
      const hex = c.series[i-1].color, rgb = [1, 3, 5].map(k => parseInt(hex.slice(k, k+2), 16));
      let n = 0;
      for (let p = 0; p < d.length; p += 4) if (near(d, p, rgb)) n++;
      pixels.push(n);
      points.push(u.data[i].filter(v => v != null).length);
    }
    for (let j = 1; j < u.series.length; j++) u.setSeries(j, {show: true});
    await frame();
    out.push({name: c.name, kind: "lines", legend, pixels, points});
  }
  return out;
})()`

// testLegendAndZoom clicks the first legend entry of chart name (its
// series hides, and shows again on a second click), then drags a box over
// the plot (the y scale narrows) and double-clicks it (the y scale comes
// back).
func testLegendAndZoom(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	fig := `figure[data-chart="` + name + `"]`
	plot := `window.lockbench.charts.find(c => c.name === "` + name + `").plot`
	entry := fig + ` .u-legend .u-series:nth-child(2)`
	for _, want := range []bool{false, true} {
		if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(entry))); err != nil {
			t.Fatal(err)
		}
		show, err := chromedp.Run(ctx, chromedp.Evaluate[bool](plot+".series[1].show"))
		if err != nil {
			t.Fatal(err)
		}
		if show != want {
			t.Errorf("%s: after clicking its legend entry, series 1 shown = %v; want %v", name, show, want)
		}
	}
	type box struct{ X, Y, W, H, Min, Max float64 }
	over := `(() => { const u = ` + plot + `; u.over.scrollIntoView({block: "center"}); const r = u.over.getBoundingClientRect();
		return {X: r.left, Y: r.top, W: r.width, H: r.height, Min: u.scales.y.min, Max: u.scales.y.max}; })()`
	before, err := chromedp.Run(ctx, chromedp.Evaluate[box](over))
	if err != nil {
		t.Fatal(err)
	}
	x0, y0 := before.X+before.W*0.3, before.Y+before.H*0.3
	x1, y1 := before.X+before.W*0.7, before.Y+before.H*0.7
	if err := chromedp.Do(ctx,
		chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, x0, y0),
		chromedp.MouseEvent(input.DispatchMouseEventTypeMousePressed, x0, y0, chromedp.ButtonLeft),
		chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, (x0+x1)/2, (y0+y1)/2, chromedp.ButtonLeft),
		chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, x1, y1, chromedp.ButtonLeft),
		chromedp.MouseEvent(input.DispatchMouseEventTypeMouseReleased, x1, y1, chromedp.ButtonLeft),
	); err != nil {
		t.Fatal(err)
	}
	zoomed, err := chromedp.Run(ctx, chromedp.Evaluate[box](over))
	if err != nil {
		t.Fatal(err)
	}
	if !(zoomed.Min > before.Min && zoomed.Max < before.Max) {
		t.Errorf("%s: after a drag, y scale [%g, %g]; want inside [%g, %g]", name, zoomed.Min, zoomed.Max, before.Min, before.Max)
	}
	if err := chromedp.Do(ctx, chromedp.MouseClickXY(x0, y0, chromedp.ClickCount(2))); err != nil {
		t.Fatal(err)
	}
	back, err := chromedp.Run(ctx, chromedp.Evaluate[box](over))
	if err != nil {
		t.Fatal(err)
	}
	if back.Min != before.Min || back.Max != before.Max {
		t.Errorf("%s: after a double-click, y scale [%g, %g]; want [%g, %g] again", name, back.Min, back.Max, before.Min, before.Max)
	}
}

// testHover moves the cursor across chart name, whose points have
// intervals over trials, and reads its legend: some value there names
// its interval and its trials.
func testHover(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	plot := `window.lockbench.charts.find(c => c.name === "` + name + `").plot`
	type box struct{ X, Y, W, H float64 }
	b, err := chromedp.Run(ctx, chromedp.Evaluate[box](`(() => { const u = `+plot+`; u.over.scrollIntoView({block: "center"});
		const r = u.over.getBoundingClientRect(); return {X: r.left, Y: r.top, W: r.width, H: r.height}; })()`))
	if err != nil {
		t.Fatal(err)
	}
	var seen []string
	for _, f := range []float64{0.02, 0.25, 0.5, 0.75, 0.98} {
		if err := chromedp.Do(ctx, chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, b.X+b.W*f, b.Y+b.H/2)); err != nil {
			t.Fatal(err)
		}
		vals, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('figure[data-chart="`+name+`"] .u-legend .u-value')].map(e => e.textContent)`))
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range vals {
			if strings.Contains(v, " trials)") {
				return
			}
		}
		seen = append(seen, strings.Join(vals, " | "))
	}
	t.Errorf("%s: hovering, no legend value names its interval over trials; saw %q", name, seen)
}

// testSort clicks the duplicates header of the verdict table twice: its
// rows are in ascending, then descending order of duplicates.
func testSort(t *testing.T, ctx context.Context) {
	t.Helper()
	const js = `(() => {
	  const table = document.querySelector("#verdicts table.sortable");
	  if (!table) return null;
	  const th = [...table.tHead.rows[0].cells];
	  const col = th.findIndex(h => h.textContent === "duplicates");
	  if (col < 0) return null;
	  const keys = () => [...table.tBodies[0].rows].map(r => parseFloat(r.cells[col].textContent));
	  th[col].click();
	  const up = keys();
	  th[col].click();
	  return {up, down: keys()};
	})()`
	res, err := chromedp.Run(ctx, chromedp.Evaluate[*struct{ Up, Down []float64 }](js))
	if err != nil {
		t.Fatal(err)
	}
	if res == nil {
		return // no verdict table
	}
	if len(res.Up) < 2 || slices.ContainsFunc(res.Up, math.IsNaN) {
		t.Fatalf("verdict table duplicates = %v; want numbers", res.Up)
	}
	if !slices.IsSorted(res.Up) {
		t.Errorf("verdict table by duplicates, first click: %v; want ascending", res.Up)
	}
	if down := slices.Clone(res.Down); !slices.IsSortedFunc(down, func(a, b float64) int { return cmpFloat(b, a) }) {
		t.Errorf("verdict table by duplicates, second click: %v; want descending", res.Down)
	}
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// readmeShot is the README's picture: the page scrolled to the chart
// chart, the cursor on it so that its legend shows the values there.
func readmeShot(chart string) chromedp.Action[[]byte] {
	return func(ctx context.Context, t *chromedp.Target) ([]byte, error) {
		type pt struct{ X, Y float64 }
		p, err := chromedp.Evaluate[pt](`(() => {
		  const c = window.lockbench.charts.find(c => c.name === "`+chart+`");
		  if (!c) return {X: 0, Y: 0};
		  document.querySelector("#charts").scrollIntoView();
		  const r = c.plot.over.getBoundingClientRect();
		  return {X: r.left + r.width * 0.62, Y: r.top + r.height * 0.5};
		})()`)(ctx, t)
		if err != nil {
			return nil, err
		}
		if _, err := chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, p.X, p.Y)(ctx, t); err != nil {
			return nil, err
		}
		time.Sleep(200 * time.Millisecond) // let the legend update
		return chromedp.CaptureScreenshot()(ctx, t)
	}
}
