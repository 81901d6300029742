package report

import (
	"fmt"
	"io"
	"path"
	"strconv"
	"strings"

	"github.com/lockbench/lockbench/results"
)

// WriteReport writes report.md, what a person reads first, in the order
// the package doc gives ("report.md"). Links and file names follow the
// layout l of the directory report.md is in. Everything in it comes from
// ss, meta, cs and l, so the same input gives the same bytes.
func WriteReport(w io.Writer, ss []results.Summary, meta results.Meta, cs ChartSet, l results.Layout) error {
	var b strings.Builder
	title := meta.Title
	if title == "" {
		title = "lockbench report"
	}
	fmt.Fprintf(&b, "# %s\n\n", title)
	writeHeader(&b, meta)
	if len(ss) == 0 {
		b.WriteString("No run has finished yet.\n")
		_, err := io.WriteString(w, b.String())
		return err
	}

	v := results.VerdictRuns(ss)
	if err := glanceMarkdown(&b, v); err != nil {
		return err
	}
	b.WriteString("## Scenarios\n\n")
	if err := scenarioTable(&b, ss); err != nil {
		return err
	}
	if len(v) > 0 {
		if err := verdictsSection(&b, v); err != nil {
			return err
		}
	}
	if err := resultsSection(&b, ss); err != nil {
		return err
	}
	b.WriteString("\n## How to read the figures\n\n")
	b.WriteString(statisticsNote(ss))
	chartsSection(&b, cs, meta, l)
	filesSection(&b, ss, len(v) > 0, meta, cs, l)
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("results: writing report: %w", err)
	}
	return nil
}

// verdictsSection writes the verdict table of the fault runs v, after
// what UNSAFE and UNKNOWN mean.
func verdictsSection(b *strings.Builder, v []results.Summary) error {
	b.WriteString("\n## Verdicts\n\n")
	b.WriteString("A run is **UNSAFE** when a payment was processed twice (duplicates), acknowledged but lost, " +
		"an account was overdrawn, an update was overwritten (lost updates) or a stale fencing token was " +
		"accepted. Overlaps and rejected stale writes show the lock failing while the store still kept " +
		"the data safe. A run is *UNKNOWN* when it could not judge the lock: fewer than 10% of its payments " +
		"got an answer from it (processed, refused or stale-refused; errors such as adapter_lost are no answer), " +
		"its fault never struck, or every designed strike missed (no other delivery asked for the lock the fault " +
		"had made forgotten, or the run ended before a failover promoted a replica: strikes_missed).\n\n")
	return VerdictTable(b, v)
}

// resultsSection writes the results table of the fault-free runs (one
// row per cell across its trials when there were several) and their
// outcomes.
func resultsSection(b *strings.Builder, ss []results.Summary) error {
	rows := resultRows(ss)
	b.WriteString("\n## Results\n\n")
	b.WriteString("Throughput achieved, and the time each delivery spent taking the lock (from its first attempt, " +
		"retries and backoff included). Total latency, in the charts, runs from each payment's intended start, " +
		"so stalls of the load generator are not hidden.\n\n")
	if results.MaxTrials(rows) > 1 {
		if err := trialsMarkdown(b, rows); err != nil {
			return err
		}
	} else if err := resultsMarkdown(b, rows); err != nil {
		return err
	}
	if err := outcomeMarkdown(b, rows); err != nil {
		return err
	}
	if len(rows) < len(ss) {
		fmt.Fprintf(b, "\nThe other %d runs (sweep points, fault runs) are in `summary.csv` and the charts below.\n", len(ss)-len(rows))
	}
	for _, s := range ss {
		if s.Interrupted {
			b.WriteString("\nSome runs were interrupted; their figures cover only what ran.\n")
			break
		}
	}
	return nil
}

// chartsSection writes the charts of cs, each a PNG with its caption,
// then the charts that were not drawn.
func chartsSection(b *strings.Builder, cs ChartSet, meta results.Meta, l results.Layout) {
	b.WriteString("\n## Charts\n")
	for _, ch := range cs.Charts {
		file := path.Join(l.Charts, ch.Name)
		svg := fmt.Sprintf(" ([SVG](%s.svg))", file)
		if meta.Archive != nil {
			svg = "" // in the archive
		}
		fmt.Fprintf(b, "\n### %s\n\n![%s](%s.png)\n\n%s%s\n", ch.Title, ch.Title, file, ch.Caption, svg)
	}
	if len(cs.Missing) > 0 {
		b.WriteString("\nNot drawn:\n\n")
		for _, m := range cs.Missing {
			fmt.Fprintf(b, "- %s\n", m)
		}
	}
}

// filesSection lists the directory's files; verdicts says whether faults
// ran (verdicts.json).
func filesSection(b *strings.Builder, ss []results.Summary, verdicts bool, meta results.Meta, cs ChartSet, l results.Layout) {
	b.WriteString("\n## Files\n\n")
	if a := meta.Archive; a != nil {
		fmt.Fprintf(b, "- `%s`: the packed data, every file below but meta.json and the PNG charts (%d files, sha256 `%s`); `tar --zstd -xf %s` unpacks it, and lockbench reads it as it is.\n", a.File, a.Files, a.SHA256, a.File)
	}
	b.WriteString("- `summary.json`, `summary.csv`: every run's counters and latencies (times in ns).\n")
	if verdicts {
		b.WriteString("- `verdicts.json`: the runs behind the verdict table.\n")
	}
	if results.MaxTrials(ss) > 1 {
		b.WriteString("- `aggregate.json`: one object per cell across its trials: unsafe trials with the Wilson interval, medians with their intervals.\n")
	}
	if l.Hlog != "" {
		fmt.Fprintf(b, "- `%s/`: HdrHistogram interval logs per run and phase, for HistogramLogAnalyzer.\n", l.Hlog)
	} else {
		b.WriteString("- `*.hlog`: HdrHistogram interval logs per run and phase, for HistogramLogAnalyzer.\n")
	}
	if l.Charts != "" && len(cs.Charts) > 0 {
		what := "PNG and SVG"
		if meta.Archive != nil {
			what = "PNG (the SVGs are in the archive)"
		}
		fmt.Fprintf(b, "- `%s/`: the charts above, %s.\n", l.Charts, what)
	}
	b.WriteString("- `bench.txt`: Go benchmark format; compare two directories with `benchstat old/bench.txt new/bench.txt`.\n")
	b.WriteString("- `meta.json`: how and where this was run. `lockbench report DIR` redraws the charts and this file.\n")
}

func writeHeader(b *strings.Builder, meta results.Meta) {
	var lines []string
	if !meta.Date.IsZero() {
		lines = append(lines, "- **Date:** "+meta.Date.Format("2006-01-02 15:04:05 MST"))
	}
	if meta.Command != "" {
		lines = append(lines, "- **Command:** `"+meta.Command+"`")
	}
	if h := hostLine(meta.Host); h != "" {
		lines = append(lines, "- **Host:** "+h)
	}
	if l := loadLine(meta); l != "" {
		lines = append(lines, "- **Load average (1/5/15 min):** "+l)
	}
	if p := meta.StealPercent; p != nil {
		lines = append(lines, fmt.Sprintf("- **Steal:** %.1f%% of the machine's CPU time went to other guests of the hypervisor during the run (/proc/stat); a few percent or more moves the figures", *p))
	}
	if v := meta.Build.String(); v != "" {
		lines = append(lines, "- **lockbench:** "+v)
	}
	if len(meta.Servers) > 0 {
		var parts []string
		for _, k := range sortedKeysOf(meta.Servers) {
			parts = append(parts, k+" "+meta.Servers[k])
		}
		lines = append(lines, "- **Servers:** "+strings.Join(parts, ", "))
	}
	if meta.Trials > 1 {
		lines = append(lines, fmt.Sprintf("- **Trials:** %d per cell, seeds %d…%d", meta.Trials, meta.Seed, meta.Seed+int64(meta.Trials)-1))
	}
	for _, n := range meta.Notes {
		lines = append(lines, "- "+n)
	}
	if len(lines) > 0 {
		b.WriteString(strings.Join(lines, "\n") + "\n\n")
	}
}

func hostLine(h results.Host) string {
	var parts []string
	if h.Hostname != "" {
		parts = append(parts, h.Hostname)
	}
	if h.OS != "" || h.Arch != "" {
		parts = append(parts, h.OS+"/"+h.Arch)
	}
	if h.NumCPU > 0 {
		parts = append(parts, strconv.Itoa(h.NumCPU)+" CPUs")
	}
	if h.CPU != "" {
		parts = append(parts, h.CPU)
	}
	if h.Kernel != "" {
		parts = append(parts, "kernel "+h.Kernel)
	}
	if h.GoVersion != "" {
		parts = append(parts, h.GoVersion)
	}
	for _, k := range sortedKeysOf(h.Extra) {
		parts = append(parts, k+" "+h.Extra[k])
	}
	return strings.Join(parts, ", ")
}

// scenarioTable lists each scenario's parameters, one row per scenario in
// the order first run; a parameter that differs between its runs (the
// points of a sweep) shows its range or "varies".
func scenarioTable(b *strings.Builder, ss []results.Summary) error {
	var names []string
	by := map[string][]results.Summary{}
	for _, s := range ss {
		if _, ok := by[s.Scenario]; !ok {
			names = append(names, s.Scenario)
		}
		by[s.Scenario] = append(by[s.Scenario], s)
	}
	header := []string{"scenario", "runs", "instances", "workers", "deliveries", "accounts", "lock key",
		"rate/s", "hold", "TTL", "store"}
	right := []bool{false, true, true, true, true, false, false, true, false, true, false}
	var rows [][]string
	for _, name := range names {
		g := by[name]
		param := func(f func(p results.Params) string) string {
			v := f(g[0].Params)
			for _, s := range g[1:] {
				if f(s.Params) != v {
					return "varies"
				}
			}
			return v
		}
		accounts := param(func(p results.Params) string {
			if p.AccountDist == "" {
				return strconv.Itoa(p.Accounts)
			}
			return fmt.Sprintf("%d (%s)", p.Accounts, p.AccountDist)
		})
		rows = append(rows, []string{
			name, strconv.Itoa(len(g)),
			param(func(p results.Params) string { return strconv.Itoa(p.Instances) }),
			param(func(p results.Params) string { return strconv.Itoa(p.Workers) }),
			param(func(p results.Params) string { return strconv.Itoa(p.DeliveriesEach) }),
			accounts,
			param(func(p results.Params) string { return p.LockKey }),
			rateRange(g),
			param(func(p results.Params) string { return p.Hold }),
			param(func(p results.Params) string { return results.FormatDuration(p.TTLNs) }),
			param(func(p results.Params) string { return p.Store }),
		})
	}
	return mdTable(b, header, right, rows)
}

// rateRange is the offered rate of a scenario's runs: one value, a range
// for a sweep, or "closed" for a closed loop.
func rateRange(g []results.Summary) string {
	lo, hi := g[0].Params.Rate, g[0].Params.Rate
	for _, s := range g[1:] {
		lo, hi = min(lo, s.Params.Rate), max(hi, s.Params.Rate)
	}
	f := func(r float64) string {
		if r == 0 {
			return "closed"
		}
		return fmtRate(r)
	}
	if lo == hi {
		return f(lo)
	}
	return f(lo) + "–" + f(hi)
}

// loadLine is the load averages before and after: "0.52 0.61 0.70 before,
// 1.90 1.20 0.85 after".
func loadLine(meta results.Meta) string {
	f := func(l *results.LoadAvg, when string) string {
		return fmt.Sprintf("%.2f %.2f %.2f %s", l[0], l[1], l[2], when)
	}
	var parts []string
	if meta.LoadBefore != nil {
		parts = append(parts, f(meta.LoadBefore, "before"))
	}
	if meta.LoadAfter != nil {
		parts = append(parts, f(meta.LoadAfter, "after"))
	}
	return strings.Join(parts, ", ")
}

// statisticsNote says how the report's figures were made: trials and
// their intervals, and which percentiles are left out.
func statisticsNote(ss []results.Summary) string {
	var b strings.Builder
	if n := results.MaxTrials(ss); n > 1 {
		fmt.Fprintf(&b, "Each cell ran %d trials with seeds seed, seed+1, … and fresh state. A figure is the median over the trials "+
			"and, from %d trials up, its 95%% confidence interval from order statistics (benchstat's method, "+
			"golang.org/x/perf/benchmath); with fewer trials, the range of the trials, which is no confidence interval. "+
			"Safety is the number of unsafe trials out of N, with the 95%% Wilson score interval of the rate. "+
			"The charts draw the same intervals as error bars.\n\n", n, results.MinTrialsForCI)
	} else {
		b.WriteString("Every cell ran once: the figures are one trial each, without their spread. " +
			"Run with `--trials 6` or more for 95% confidence intervals (`aggregate.json`), and compare two run " +
			"directories with `lockbench compare OLD NEW`.\n\n")
	}
	fmt.Fprintf(&b, "A percentile is reported only when at least %d samples lie beyond it (p99 needs %d samples, p99.9 %d); "+
		"otherwise it is %s here, null in the JSON files and an empty cell in `summary.csv`.\n",
		results.MinTailSamples, results.MinCount(results.StatP99), results.MinCount(results.StatP999), results.Dash)
	return b.String()
}
