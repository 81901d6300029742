package report

import (
	"fmt"
	"io"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/lockbench/lockbench/results"
)

// Comparison is two run directories side by side (`lockbench compare OLD
// NEW`): every cell found in both, each figure's medians, their change and
// whether it is significant, and each cell's verdict in both; plus what
// makes the two hard to compare.
type Comparison struct {
	Rows []CompareRow
	// OnlyOld and OnlyNew name the cells found in one directory alone.
	OnlyOld, OnlyNew []string
	// Warnings say what differs between the two beyond the code under
	// test: the host, lockbench's build, the servers, a cell's parameters.
	Warnings []string
}

// CompareRow is one cell found in both directories.
type CompareRow struct {
	// Cell names the cell: strategy, variant, fencing, scenario, fault and
	// the sweep point.
	Cell     string
	Old, New results.Cell
	Metrics  []MetricChange
}

// MetricChange is one figure of a cell in both directories.
type MetricChange struct {
	Name string
	// HigherBetter is true for throughput, false for latency.
	HigherBetter bool
	Old, New     results.Estimate
	// DeltaPct is the change of the median in percent; NaN when the old
	// median is 0 or either is missing.
	DeltaPct float64
	Sig      results.Significance
	// format prints a value of the figure.
	format func(float64) string
}

// Slower reports whether the change is a significant slowdown (less
// throughput, more latency) of more than pct percent.
func (m MetricChange) Slower(pct float64) bool {
	if !m.Sig.Significant() || math.IsNaN(m.DeltaPct) {
		return false
	}
	if m.HigherBetter {
		return -m.DeltaPct > pct
	}
	return m.DeltaPct > pct
}

// DeltaString is the change as benchstat prints it: "+5.2%" when
// significant, "~" when not, "~ (too few trials)" when the trials could
// not tell, with the test's p-value and sample sizes.
func (m MetricChange) DeltaString() string {
	n := fmt.Sprintf("n=%d+%d", m.Old.N, m.New.N)
	switch {
	case !m.Old.OK() || !m.New.OK():
		return results.Dash
	case m.Sig.TooFew:
		return "~ (too few trials) " + n
	case !m.Sig.Significant():
		return fmt.Sprintf("~ (p=%.3f %s)", m.Sig.P, n)
	case math.IsNaN(m.DeltaPct):
		return fmt.Sprintf("? (p=%.3f %s)", m.Sig.P, n)
	}
	return fmt.Sprintf("%+.1f%% (p=%.3f %s)", m.DeltaPct, m.Sig.P, n)
}

// compareMetrics are the figures compared per cell.
var compareMetrics = []struct {
	name         string
	higherBetter bool
	value        func(s *results.Summary) (float64, bool)
	format       func(float64) string
}{
	{"payments/s", true, func(s *results.Summary) (float64, bool) { return s.PaymentsPerSec, true }, fmtRate},
	{"acquire p50", false, latencyValue("acquire", results.StatP50), fmtDurF},
	{"acquire p99", false, latencyValue("acquire", results.StatP99), fmtDurF},
	{"total p50", false, latencyValue("total", results.StatP50), fmtDurF},
	{"total p99", false, latencyValue("total", results.StatP99), fmtDurF},
}

func latencyValue(phase, stat string) func(s *results.Summary) (float64, bool) {
	return func(s *results.Summary) (float64, bool) {
		v, ok := s.Latency[phase].Value(stat)
		return float64(v), ok
	}
}

// compareKey matches cells across directories: what the cell is and the
// parameters a sweep varies. The other parameters are compared, and a
// difference is a warning, not a different cell, so that a directory
// written before every parameter was recorded still compares.
type compareKey struct {
	strategy, scenario, fault, variant string
	fencing                            bool
	rate                               float64
	accounts                           int
}

func compareKeyOf(s *results.Summary) compareKey {
	return compareKey{s.Strategy, s.Scenario, faultName(s), s.Variant, s.Fencing, s.Params.Rate, s.Params.Accounts}
}

func (k compareKey) String() string {
	name := seriesKey{k.strategy, k.variant, k.fencing}.name()
	if k.fencing {
		name += " (fenced)"
	}
	parts := []string{name, k.scenario, k.fault}
	if strings.HasPrefix(k.scenario, results.ScenarioSweep) {
		parts = append(parts, fmtRate(k.rate)+"/s")
	}
	if strings.HasPrefix(k.scenario, results.ScenarioContention) {
		parts = append(parts, "accounts="+strconv.Itoa(k.accounts))
	}
	return strings.Join(parts, " ")
}

// CompareRuns compares the runs of two directories, old and new, with their
// Meta: the cells in both, matched by strategy, scenario, fault, variant,
// fencing and sweep point, in old's order.
func CompareRuns(oldRuns []results.Summary, oldMeta results.Meta, newRuns []results.Summary, newMeta results.Meta) Comparison {
	var c Comparison
	c.Warnings = metaWarnings(oldMeta, newMeta)
	type side struct {
		keys []compareKey
		runs map[compareKey][]results.Summary
	}
	split := func(ss []results.Summary) side {
		sd := side{runs: map[compareKey][]results.Summary{}}
		for _, s := range ss {
			k := compareKeyOf(&s)
			if _, ok := sd.runs[k]; !ok {
				sd.keys = append(sd.keys, k)
			}
			sd.runs[k] = append(sd.runs[k], s)
		}
		return sd
	}
	o, n := split(oldRuns), split(newRuns)
	var paramDiffs []string
	for _, k := range o.keys {
		nr, ok := n.runs[k]
		if !ok {
			c.OnlyOld = append(c.OnlyOld, k.String())
			continue
		}
		or := o.runs[k]
		row := CompareRow{Cell: k.String(), Old: results.CellOf(or), New: results.CellOf(nr)}
		for _, m := range compareMetrics {
			var ov, nv []float64
			for i := range or {
				if v, ok := m.value(&or[i]); ok {
					ov = append(ov, v)
				}
			}
			for i := range nr {
				if v, ok := m.value(&nr[i]); ok {
					nv = append(nv, v)
				}
			}
			mc := MetricChange{Name: m.name, HigherBetter: m.higherBetter, Old: results.EstimateOf(ov), New: results.EstimateOf(nv),
				DeltaPct: math.NaN(), Sig: results.Compare(ov, nv), format: m.format}
			if mc.Old.OK() && mc.New.OK() && mc.Old.Median != 0 {
				mc.DeltaPct = 100 * (mc.New.Median/mc.Old.Median - 1)
			}
			row.Metrics = append(row.Metrics, mc)
		}
		if d := paramsDiff(or[0].Params, nr[0].Params); d != "" {
			paramDiffs = append(paramDiffs, k.String()+": "+d)
		}
		c.Rows = append(c.Rows, row)
	}
	for _, k := range n.keys {
		if _, ok := o.runs[k]; !ok {
			c.OnlyNew = append(c.OnlyNew, k.String())
		}
	}
	const maxParamWarnings = 5
	for i, d := range paramDiffs {
		if i == maxParamWarnings {
			c.Warnings = append(c.Warnings, fmt.Sprintf("parameters differ in %d more cells", len(paramDiffs)-i))
			break
		}
		c.Warnings = append(c.Warnings, "parameters differ: "+d)
	}
	return c
}

// paramsDiff lists the parameters that differ between a and b, "instances
// 3 → 2, hold 1ms → 2ms", leaving out the seed (trials differ by it) and
// any parameter one side did not record (zero).
func paramsDiff(a, b results.Params) string {
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	t := va.Type()
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "seed" {
			continue
		}
		x, y := va.Field(i), vb.Field(i)
		if x.IsZero() || y.IsZero() || x.Equal(y) {
			continue
		}
		out = append(out, fmt.Sprintf("%s %v → %v", name, x.Interface(), y.Interface()))
	}
	return strings.Join(out, ", ")
}

// metaWarnings says how the two directories' hosts, builds and servers
// differ.
func metaWarnings(a, b results.Meta) []string {
	var w []string
	diff := func(what, x, y string) {
		if x != "" && y != "" && x != y {
			w = append(w, fmt.Sprintf("%s differs: %s → %s", what, x, y))
		}
	}
	diff("host", a.Host.Hostname, b.Host.Hostname)
	diff("CPU", a.Host.CPU, b.Host.CPU)
	if a.Host.NumCPU > 0 && b.Host.NumCPU > 0 && a.Host.NumCPU != b.Host.NumCPU {
		w = append(w, fmt.Sprintf("CPU count differs: %d → %d", a.Host.NumCPU, b.Host.NumCPU))
	}
	diff("kernel", a.Host.Kernel, b.Host.Kernel)
	diff("Go", a.Host.GoVersion, b.Host.GoVersion)
	diff("lockbench", a.Build.String(), b.Build.String())
	kinds := map[string]bool{}
	for k := range a.Servers {
		kinds[k] = true
	}
	for k := range b.Servers {
		kinds[k] = true
	}
	var names []string
	for k := range kinds {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		diff(k+" version", a.Servers[k], b.Servers[k])
	}
	return w
}

// VerdictChanged reports whether the cell's verdict differs between the
// two directories.
func (r *CompareRow) VerdictChanged() bool { return cellVerdict(&r.Old) != cellVerdict(&r.New) }

// TurnedUnsafe reports whether the cell was safe in every old trial and
// lost safety in a new one.
func (r *CompareRow) TurnedUnsafe() bool { return r.Old.UnsafeTrials == 0 && r.New.UnsafeTrials > 0 }

// Regressions lists what `--fail-on-regression pct` fails on: each
// significant slowdown of more than pct percent, and each verdict that
// turned unsafe.
func (c *Comparison) Regressions(pct float64) []string {
	var out []string
	for i := range c.Rows {
		r := &c.Rows[i]
		if r.TurnedUnsafe() {
			out = append(out, fmt.Sprintf("%s: verdict %s → %s", r.Cell, fmtVerdictTrials(&r.Old), fmtVerdictTrials(&r.New)))
		}
		for _, m := range r.Metrics {
			if m.Slower(pct) {
				out = append(out, fmt.Sprintf("%s: %s %s → %s (%+.1f%%, p=%.3f)", r.Cell, m.Name,
					m.format(m.Old.Median), m.format(m.New.Median), m.DeltaPct, m.Sig.P))
			}
		}
	}
	return out
}

// fmtVerdictTrials is a cell's verdict with its unsafe trials: "UNSAFE
// 3/6", or "SAFE" for a single safe trial.
func fmtVerdictTrials(c *results.Cell) string {
	v := cellVerdict(c)
	if c.Trials > 1 || c.UnsafeTrials > 0 {
		v += " " + strconv.Itoa(c.UnsafeTrials) + "/" + strconv.Itoa(c.Trials)
	}
	if c.UnknownTrials > 0 {
		v += ", " + strconv.Itoa(c.UnknownTrials) + " unknown"
	}
	return v
}

// WriteComparison prints c for the terminal, as benchstat does: the
// warnings first, then one table per figure (cell, old median with its
// interval, new, and the change: a percentage when significant, "~" when
// not, "~ (too few trials)" when there were too few to tell), then the
// verdicts, a change in bold, and the cells found on one side only.
func WriteComparison(w io.Writer, c Comparison, oldName, newName string) error {
	var b strings.Builder
	for _, warn := range c.Warnings {
		b.WriteString("warning: " + warn + "\n")
	}
	if len(c.Warnings) > 0 {
		b.WriteString("\n")
	}
	if len(c.Rows) == 0 {
		b.WriteString("no cell is in both directories\n")
	}
	for mi, m := range compareMetrics {
		if len(c.Rows) == 0 {
			break
		}
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "%s\t%s\t%s\tdelta\n", m.name, oldName, newName)
		for _, r := range c.Rows {
			mc := r.Metrics[mi]
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.Cell, fmtEstimate(mc.Old, mc.Old.N, m.format),
				fmtEstimate(mc.New, mc.New.N, m.format), mc.DeltaString())
		}
		if err := tw.Flush(); err != nil {
			return fmt.Errorf("results: writing comparison: %w", err)
		}
		b.WriteString("\n")
	}
	if len(c.Rows) > 0 {
		header := []string{"cell", oldName, newName}
		var rows [][]string
		for i := range c.Rows {
			r := &c.Rows[i]
			ov, nv := fmtVerdictTrials(&r.Old), fmtVerdictTrials(&r.New)
			if r.VerdictChanged() {
				ov, nv = "**"+ov+"**", "**"+nv+"**"
			}
			rows = append(rows, []string{r.Cell, ov, nv})
		}
		b.WriteString("verdicts\n\n")
		if err := mdTable(&b, header, []bool{false, false, false}, rows); err != nil {
			return err
		}
	}
	for _, only := range []struct {
		name  string
		cells []string
	}{{oldName, c.OnlyOld}, {newName, c.OnlyNew}} {
		const maxListed = 8
		switch n := len(only.cells); {
		case n > maxListed:
			fmt.Fprintf(&b, "\nonly in %s: %d cells (%s; …)\n", only.name, n, strings.Join(only.cells[:maxListed], "; "))
		case n > 0:
			fmt.Fprintf(&b, "\nonly in %s: %s\n", only.name, strings.Join(only.cells, "; "))
		}
	}
	b.WriteString("\n[a–b]: 95% confidence interval of the median; (a–b): range of fewer than " + strconv.Itoa(results.MinTrialsForCI) +
		" trials; delta: change of the median, significant at p ≤ 0.05 by the Mann–Whitney U test (benchstat's), \"~\" when not.\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// ReadSummaries reads the summaries and Meta of a run directory without
// its interval logs: summary.json and meta.json (zero Meta when missing).
// Directories of every layout lockbench wrote read, packed
// (results.Pack) or not.
func ReadSummaries(dir string) ([]results.Summary, results.Meta, error) {
	meta, ss, err := results.ReadDirData(dir)
	return ss, meta, err
}
