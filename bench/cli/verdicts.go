package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strings"
	"time"

	"github.com/lockbench/lockbench/bench/faults"
	"github.com/lockbench/lockbench/internal/atomicfile"
	"github.com/lockbench/lockbench/loadgen"
	"github.com/lockbench/lockbench/report"
	"github.com/lockbench/lockbench/results"
	"github.com/lockbench/lockbench/servers"
	"github.com/lockbench/lockbench/strategies"
)

// VerdictsMarkdownFile is the verdict table in Markdown, written next to
// verdicts.json.
const VerdictsMarkdownFile = "verdicts.md"

// The verdict scenario: small enough that the whole table takes a few
// minutes on two cores, contended enough that every fault meets a holder
// and a contender. Two instances each get every payment (the "same
// request lands on two instances"); the TTL is short so that pause and slow
// outlast it quickly.
const (
	verdictInstances = 2
	verdictWorkers   = 4
	verdictAccounts  = 10
	verdictHold      = "5ms"
	verdictTTL       = time.Second
	verdictRate      = 100 // payments per second, open loop
	// verdictPayments is 3.5 s of load: the fault strikes at 30% (about
	// 1 s in) and a node fault (1.5 s) is over a second before the end.
	verdictPayments = 350
	// verdictRandomPayments is the longer run of a random fault schedule
	// (schedule=random): 10 s, several strikes at every=1s.
	verdictRandomPayments = 1000
	// verdictBaseline is the shorter fault-free run: 1.5 s.
	verdictBaseline = 150
	// verdictFaultLength is how long kill-node and partition last, instead
	// of their 3 s default.
	verdictFaultLength = "1500ms"
)

// verdictFaultSpec is the --fault value each fault runs with in the table.
func verdictFaultSpec(name string) string {
	switch name {
	case "kill-node":
		return name + ":down=" + verdictFaultLength
	case "partition":
		return name + ":for=" + verdictFaultLength
	}
	return name
}

// verdictScenario is the scenario of one cell, before the fault adjusts it.
func verdictScenario(fault string, fencing bool) loadgen.Scenario {
	sc := loadgen.DefaultScenario()
	sc.Name = "verdicts"
	sc.Instances, sc.Deliveries, sc.Workers = verdictInstances, verdictInstances, verdictWorkers
	sc.Accounts = verdictAccounts
	sc.Hold, _ = loadgen.ParseHold(verdictHold)
	sc.TTL = verdictTTL
	sc.Rate = verdictRate
	sc.Payments = verdictPayments
	if fault == "none" {
		sc.Payments = verdictBaseline
	}
	sc.Fencing = fencing
	if fault != "none" {
		sc.Interval = faultInterval
	}
	return sc
}

// verdictCase is one cell of the table: a strategy under a fault, with the
// store's fencing check off or on.
type verdictCase struct {
	strategy string
	info     strategies.Info
	spec     faults.Spec
	sc       loadgen.Scenario
	// wait is the cell's --redis-wait (0: none); the session applies it.
	wait int
}

func (c verdictCase) label() string {
	name := c.strategy
	if v := c.variant(); v != "" {
		name += " [" + v + "]"
	}
	return fmt.Sprintf("%s × %s (fencing %s)", name, c.spec.Name, onOff(c.sc.Fencing && c.info.Fencing))
}

// variant is the cell's variant as label shows it: the scenario's, and the
// WAIT and strict fencing the cell adds (the session labels its runs the
// same way).
func (c verdictCase) variant() string {
	var parts []string
	if c.sc.Variant != "" {
		parts = append(parts, c.sc.Variant)
	}
	if c.wait > 0 {
		parts = append(parts, fmt.Sprintf("wait=%d", c.wait))
	}
	if c.sc.FencingStrict {
		parts = append(parts, "fencing=strict")
	}
	return strings.Join(parts, ",")
}

// variantCases adds to the cells of verdictCases the variants the rules
// under test ask for: for every cell of a fenced strategy with the store's
// check on, the same with the strict rule (a token handed out twice is
// refused too), side by side; with wait above 0, every cell of a
// single-node Redis strategy again with WAIT (--redis-wait), so that what
// WAIT buys and what it costs show side by side too.
func variantCases(cases []verdictCase, wait int) []verdictCase {
	var out []verdictCase
	for _, c := range cases {
		group := []verdictCase{c}
		if c.info.Fencing && c.sc.Fencing {
			strict := c
			strict.sc.FencingStrict = true
			group = append(group, strict)
		}
		if wait > 0 && c.info.Need.Backend == strategies.BackendRedis && c.info.Need.Nodes <= 1 {
			for _, g := range group[:len(group):len(group)] {
				g.wait = wait
				group = append(group, g)
			}
		}
		out = append(out, group...)
	}
	return out
}

// notApplicable says why a cell cannot run on the session's servers: a
// strategy that needs independent Redis masters on a replicated Redis, or
// a fault the servers' layout rules out (faults.Spec.Fits: a failover needs
// replicas, a partition cannot reroute a Sentinel client); "" when it can.
func (s *session) notApplicable(c verdictCase) string {
	t, err := servers.TargetFor(c.info.Need, s.ep, s.cluster)
	switch {
	case errors.Is(err, servers.ErrNeedsMasters):
		return "needs independent Redis masters; the sentinel topology has one primary and its replicas"
	case err != nil:
		return ""
	}
	if err := c.spec.Fits(t); err != nil {
		return err.Error()
	}
	return ""
}

// notApplicablePrefix marks the cells runCases did not run because they do
// not apply to the servers' layout.
const notApplicablePrefix = "not applicable: "

// printNotApplicable lists the cells that did not apply, by reason.
func printNotApplicable(w io.Writer, skipped []string) {
	var reasons []string
	cells := map[string][]string{}
	for _, s := range skipped {
		rest, ok := strings.CutPrefix(s, notApplicablePrefix)
		if !ok {
			continue
		}
		cell, why, _ := strings.Cut(rest, ": ")
		if _, seen := cells[why]; !seen {
			reasons = append(reasons, why)
		}
		cells[why] = append(cells[why], cell)
	}
	for _, why := range reasons {
		fmt.Fprintf(w, "\nNot applicable, not run (%s): %s\n", why, strings.Join(cells[why], "; "))
	}
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// verdictCases lists the cells: every fault (in faults.Names order) × every
// strategy it applies to; strategies with fencing tokens twice, with the
// store's check off (what the lock alone gives) and on (what the token
// adds). Strategies without tokens run once, the check being moot for them.
func verdictCases(names, faultNames []string) ([]verdictCase, error) {
	var cases []verdictCase
	for _, f := range faultNames {
		spec, err := faults.Parse(verdictFaultSpec(f))
		if err != nil {
			return nil, err
		}
		for _, name := range names {
			info, _ := strategies.Lookup(name)
			if !spec.AppliesTo(info) {
				continue
			}
			fencings := []bool{false}
			if info.Fencing {
				fencings = []bool{false, true}
			}
			for _, fencing := range fencings {
				base := verdictScenario(f, fencing)
				if _, params, ok := strings.Cut(specString(spec), ":"); ok && strings.Contains(f, ":") {
					base.Variant = params // told apart from the designed cell
				}
				if spec.Random() {
					base.Payments = verdictRandomPayments
				}
				if info.Transactional {
					base.Store = "postgres" // it takes no lock: the store is its protection
				}
				sc, err := spec.Adjust(base)
				if err != nil {
					return nil, err
				}
				if err := sc.Validate(); err != nil {
					return nil, err
				}
				cases = append(cases, verdictCase{strategy: name, info: info, spec: spec, sc: sc})
			}
			if f == "none" && !info.CrossProcess {
				// The monolith: both deliveries of each payment land on
				// one instance, on two of its workers at once. An
				// in-process lock is enough there (nolock still is not).
				sc := verdictScenario(f, false)
				sc.Instances, sc.Variant = 1, "instances=1"
				if err := sc.Validate(); err != nil {
					return nil, err
				}
				cases = append(cases, verdictCase{strategy: name, info: info, spec: spec, sc: sc})
			}
			if f == "partition" && info.SessionBound {
				// A session-bound lock survives a cut (its connection
				// waits it out) but not a reset of its connection under a
				// live holder, which is how it is lost in production.
				reset, err := faults.Parse("partition:mode=reset")
				if err != nil {
					return nil, err
				}
				sc, err := reset.Adjust(verdictScenario(f, false))
				if err != nil {
					return nil, err
				}
				sc.Variant = "mode=reset"
				if err := sc.Validate(); err != nil {
					return nil, err
				}
				cases = append(cases, verdictCase{strategy: name, info: info, spec: reset, sc: sc})
			}
		}
	}
	return cases, nil
}

// parseFaults checks the --fault values against the registry: each a
// spec with parameters (NAME:key=value,…, kept whole), or a comma list of
// bare names, or all.
func parseFaults(values []string) ([]string, error) {
	var out []string
	for _, v := range values {
		switch {
		case strings.Contains(v, ":"):
			if _, err := faults.Parse(v); err != nil {
				return nil, err
			}
			out = append(out, v)
		case v == "all":
			out = append(out, faults.Names()...)
		default:
			names, err := parseList("fault", v, strings.Join(faults.Names(), ", ")+", or all", func(n string) error {
				if _, ok := faults.Lookup(n); !ok {
					return fmt.Errorf("unknown fault %q", n)
				}
				return nil
			})
			if err != nil {
				return nil, err
			}
			out = append(out, names...)
		}
	}
	return out, nil
}

// hasLocal reports whether the session started the servers the strategy
// uses itself (node faults need that).
func (s *session) hasLocal(info strategies.Info) bool {
	t, err := s.target(info)
	return err == nil && t.Local()
}

// verdictsOptions are the parsed and checked input of `lockbench verdicts`.
type verdictsOptions struct {
	ef                           endpointFlags
	mf                           metricsFlag
	cases                        []verdictCase
	out                          string
	asJSON, failOnUnsafe, dryRun bool
	trials                       int
	lanes                        int
	seed                         int64
}

// parseVerdicts parses and checks the input of `lockbench verdicts` and
// builds its cells, starting nothing.
func parseVerdicts(args []string, stdout, stderr io.Writer) (o verdictsOptions, err error) {
	fs := newFlagSet("verdicts", stderr)
	var ef endpointFlags
	ef.register(fs)
	var mf metricsFlag
	mf.register(fs)
	strategyList := fs.String("strategy", "all", "comma-separated strategies (see `lockbench strategies`), or all")
	faultList := faultsFlag(fs, "all", "comma-separated faults, or all: "+strings.Join(faults.Names(), ", ")+"; or one NAME:key=value,… (schedule=random,every=1s)")
	out := fs.String("out", "", "run directory (default out/verdicts-DATE-TIME)")
	asJSON := fs.Bool("json", false, "print verdicts.json to stdout instead of the table")
	failOnUnsafe := fs.Bool("fail-on-unsafe", false, "exit 3 when any strategy lost safety (for CI)")
	trials := trialsFlag(fs)
	lanes := lanesFlag(fs)
	seed := seedFlag(fs)
	dryRun := fs.Bool("dry-run", false, "print the cells that would run, with an estimated time, and run nothing")
	if err := parseFlags(fs, args, stdout); err != nil {
		return o, err
	}
	if err := checkLanes(*lanes, ef); err != nil {
		return o, err
	}
	names, err := parseStrategies(*strategyList)
	if err != nil {
		return o, err
	}
	faultNames, err := parseFaults(faultList.list())
	if err != nil {
		return o, err
	}
	cases, err := verdictCases(names, faultNames)
	if err != nil {
		return o, err
	}
	if len(cases) == 0 {
		return o, usageErr("--fault: none of %s applies to %s", strings.Join(faultNames, ", "), strings.Join(names, ", "))
	}
	cases = variantCases(cases, ef.wait)
	for i := range cases {
		cases[i].sc.Seed = *seed
	}
	if _, err := ef.endpoints(); err != nil {
		return o, err
	}
	if err := ef.checkSequencedCells(cases); err != nil {
		return o, err
	}
	return verdictsOptions{ef: ef, mf: mf, cases: cases, out: *out, asJSON: *asJSON, failOnUnsafe: *failOnUnsafe,
		dryRun: *dryRun, trials: *trials, lanes: *lanes, seed: *seed}, nil
}

// runVerdicts is `lockbench verdicts`: every strategy under every fault that
// applies to it, in one small scenario, and the verdict table.
func runVerdicts(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	o, err := parseVerdicts(args, stdout, stderr)
	if err != nil {
		return err
	}
	cases := o.cases
	if o.dryRun {
		return printCases(stdout, "verdicts", cases, o.trials, o.lanes)
	}
	var opts servers.Options
	for _, c := range cases {
		opts.Faketime = opts.Faketime || c.spec.ServerOptions().Faketime
	}
	var need servers.Needs
	for _, c := range cases {
		need.Merge(needs([]string{c.strategy}, c.sc))
	}
	dir, err := newRunDir(o.out, "verdicts", args)
	if err != nil {
		return err
	}
	defer sayInterruptedAtExit(ctx, stderr, dir) // after the report is written
	defer dir.closeAtExit(&err)
	began := time.Now()
	sess, err := openSession(ctx, o.ef, need, opts, stderr)
	if err != nil {
		return err
	}
	defer sess.Close()
	if err := sess.serveMetrics(o.mf); err != nil {
		return err
	}
	dir.describe(ctx, sess, o.trials, o.seed)

	var tokenless []string
	for _, c := range cases {
		if !c.info.Fencing && !contains(tokenless, c.strategy) {
			tokenless = append(tokenless, c.strategy)
		}
	}
	lanes, closeLanes, err := openLanes(ctx, sess, o.ef, need, opts, o.lanes, stderr)
	if err != nil {
		return err
	}
	defer closeLanes()
	skipped, failed, err := runCases(ctx, lanes, dir, cases, o.trials, stderr)
	if err != nil {
		return err
	}
	sums := dir.summaries()
	var table bytes.Buffer
	if err := report.VerdictTable(&table, sums); err != nil {
		return err
	}
	if err := atomicfile.WriteFile(filepath.Join(dir.dir, VerdictsMarkdownFile), table.Bytes()); err != nil {
		return err
	}
	if err := dir.close(); err != nil {
		return err
	}
	wall := time.Since(began).Round(time.Second)
	if o.asJSON {
		if err := results.WriteJSON(stdout, sums); err != nil {
			return err
		}
	} else {
		stdout.Write(table.Bytes())
		fmt.Fprintln(stdout)
		if err := windowTable(stdout, dir.runs); err != nil {
			return err
		}
		if err := waitTable(stdout, dir.runs); err != nil {
			return err
		}
		printNotApplicable(stdout, skipped)
		if len(tokenless) > 0 {
			fmt.Fprintf(stdout, "\n%s issue no fencing token, so the store's check cannot help them: they run once, with it off.\n", strings.Join(tokenless, ", "))
		}
		fmt.Fprintf(stdout, "%d runs in %s; run directory: %s\n", len(sums), wall, dir.dir)
	}
	for _, s := range skipped {
		fmt.Fprintln(stderr, "skipped:", s)
	}
	if len(failed) > 0 {
		return fmt.Errorf("verdicts: %d of %d runs failed:\n  %s", len(failed), len(cases), strings.Join(failed, "\n  "))
	}
	if o.failOnUnsafe {
		for _, s := range sums {
			if s.Unsafe {
				return fmt.Errorf("%w: %s", ErrUnsafe, s.String())
			}
		}
	}
	return nil
}

// windowTable shows what each fault did to availability while it lasted:
// the lock cycles completed per second before, during and after the fault
// window. They come from the run's latency intervals (250ms for fault
// runs), each interval's cycles shared out in proportion to its overlap
// with the three spans, so the figures are approximate at the window's
// edges.
func windowTable(w io.Writer, runs []results.Run) error {
	fmt.Fprintln(w, "Lock cycles completed per second before, during and after each fault window (from the latency intervals, approximate at the edges; with trials, the median trial):")
	fmt.Fprintln(w)
	type key struct {
		strategy, variant, fault string
		fencing                  bool
	}
	type row struct {
		s     results.Summary
		rates [3][]float64
	}
	var order []key
	rows := map[key]*row{}
	for _, r := range runs {
		s := r.Summary
		if s.FaultWindow == nil {
			continue
		}
		k := key{s.Strategy, s.Variant, s.Fault, s.Fencing}
		if rows[k] == nil {
			order = append(order, k)
			rows[k] = &row{s: s}
		}
		for i, v := range windowRates(r) {
			rows[k].rates[i] = append(rows[k].rates[i], v)
		}
	}
	// The strategy column names the variant too, as the verdict table
	// does: two rows of one strategy and fault differ in it.
	label := func(k key) string {
		if k.variant == "" {
			return k.strategy
		}
		return k.strategy + " [" + k.variant + "]"
	}
	width := len("strategy")
	for _, k := range order {
		width = max(width, len(label(k)))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%-*s %-12s %-7s %-15s %8s %8s %8s\n", width, "strategy", "fault", "fencing", "window", "before", "during", "after")
	for _, k := range order {
		r := rows[k]
		rate := func(i int) string {
			if e := results.EstimateOf(r.rates[i]); e.OK() {
				return fmt.Sprintf("%.0f", e.Median)
			}
			return "-"
		}
		win := fmt.Sprintf("%.1f–%.1fs", time.Duration(r.s.FaultWindow.StartNs).Seconds(), time.Duration(r.s.FaultWindow.EndNs).Seconds())
		fmt.Fprintf(&b, "%-*s %-12s %-7s %-15s %8s %8s %8s\n", width, label(k), r.s.Fault, onOff(r.s.Fencing), win, rate(0), rate(1), rate(2))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// windowRates are the lock cycles per second of r before, during and
// after its fault window; NaN for a span shorter than 100ms.
func windowRates(r results.Run) [3]float64 {
	win := r.Summary.FaultWindow
	spans := [3][2]int64{{math.MinInt64, win.StartNs}, {win.StartNs, win.EndNs}, {win.EndNs, math.MaxInt64}}
	var n, secs [3]float64
	for _, iv := range r.Intervals {
		length := float64(iv.EndNs - iv.StartNs)
		if length <= 0 {
			continue
		}
		var c float64
		if h := iv.Hists[results.Critical]; h != nil {
			c = float64(h.TotalCount())
		}
		for k, sp := range spans {
			overlap := float64(min(iv.EndNs, sp[1]) - max(iv.StartNs, sp[0]))
			if overlap > 0 {
				n[k] += c * overlap / length
				secs[k] += time.Duration(overlap).Seconds()
			}
		}
	}
	var out [3]float64
	for k := range out {
		out[k] = math.NaN()
		if secs[k] >= 0.1 {
			out[k] = n[k] / secs[k]
		}
	}
	return out
}

// waitTable shows what WAIT buys and what it costs: each cell of a
// single-node Redis strategy that also ran with WAIT (--redis-wait), both
// ways, with its verdict, availability, give-ups and acquire latency. It
// writes nothing when no cell ran with WAIT.
func waitTable(w io.Writer, runs []results.Run) error {
	type cell struct{ strategy, fault, variant string }
	withWait := map[cell]bool{}
	base := func(v string) (string, bool) {
		var keep []string
		waited := false
		for _, p := range strings.Split(v, ",") {
			if strings.HasPrefix(p, "wait=") {
				waited = true
				continue
			}
			keep = append(keep, p)
		}
		return strings.Join(keep, ","), waited
	}
	for _, r := range runs {
		if b, waited := base(r.Summary.Variant); waited {
			withWait[cell{r.Summary.Strategy, r.Summary.Fault, b}] = true
		}
	}
	if len(withWait) == 0 {
		return nil
	}
	stat := func(s *results.Summary, phase, st string) string {
		if v, ok := s.Latency[phase].Value(st); ok {
			return results.FormatDuration(v)
		}
		return results.Dash
	}
	var b strings.Builder
	fmt.Fprintln(&b, "\nWhat WAIT buys and costs (the same cells without and with it):")
	fmt.Fprintln(&b)
	fmt.Fprintf(&b, "%-16s %-10s %-42s %-8s %12s %12s %12s %12s %12s\n", "strategy", "fault", "variant", "verdict", "availability", "not acquired", "acquire p50", "acquire p99", "total p99")
	for _, r := range runs {
		s := r.Summary
		if bv, _ := base(s.Variant); !withWait[cell{s.Strategy, s.Fault, bv}] {
			continue
		}
		fmt.Fprintf(&b, "%-16s %-10s %-42s %-8s %11.1f%% %12d %12s %12s %12s\n", s.Strategy, s.Fault, s.Variant, s.Verdict(),
			100*s.Availability, s.NotAcquired, stat(&s, "acquire", results.StatP50), stat(&s, "acquire", results.StatP99), stat(&s, "total", results.StatP99))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// printCases is --dry-run: the cells a command would run, each with its
// estimated time, and the total; it runs nothing and starts no server.
func printCases(w io.Writer, what string, cases []verdictCase, trials, lanes int) error {
	var b strings.Builder
	var sum time.Duration
	fmt.Fprintf(&b, "%-44s %-9s %-9s %8s %9s\n", "cell", "instances", "payments", "trials", "estimate")
	for _, c := range cases {
		d := estimate(c.sc) * time.Duration(trials)
		sum += d
		fmt.Fprintf(&b, "%-44s %-9s %-9d %8d %9s\n", c.label(), c.sc.InstanceMode, c.sc.Payments, trials, fmtEstimate(d))
	}
	inLanes := ""
	if lanes > 1 {
		inLanes = fmt.Sprintf(" in %d lanes", lanes)
	}
	fmt.Fprintf(&b, "\n%s: %d cells × %d trials = %d runs, %s%s with server start-up (estimated; nothing was run)\n",
		what, len(cases), trials, len(cases)*trials, fmtEstimate(sum/time.Duration(lanes)+time.Duration(lanes)*estimateServers), inLanes)
	_, err := io.WriteString(w, b.String())
	return err
}
