package cli

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockbench/lockbench/loadgen"
	"github.com/lockbench/lockbench/loadgen/store"
	"github.com/lockbench/lockbench/results"
	"github.com/lockbench/lockbench/servers"
	"github.com/lockbench/lockbench/strategies"
	"github.com/lockbench/lockbench/strategies/redisutil"
)

// Ranges of compare-redis's flags.
const (
	maxCompareClients  = 1000
	minCompareRequests = 1000
	maxCompareRequests = 10_000_000
	maxCompareRounds   = 100
	// defaultCompareRounds is --rounds' default: 8, even, so that as many
	// rounds run lockbench before the bare client as after it
	// (roundOrder; on the second EPYC VM the in-process measurement that
	// ran second was the slower more often than not).
	defaultCompareRounds = 8
	// maxFailBelow bounds --fail-below: a ratio to the bare client above 2
	// cannot be met.
	maxFailBelow = 2
)

// harnessTarget is the ratio of lockbench's lock-cycle rate to the bare
// client's that compare-redis and compare-postgres aim at: 0.95, the
// harness taking at most 5% (its CPU per cycle, at most 5% more).
const harnessTarget = 0.95

// compareOptions are the parsed and checked flags of compare-redis.
type compareOptions struct {
	mf                 metricsFlag
	clients, n, rounds int
	failBelow          float64
	cpuProfile         string
}

// parseCompare parses and checks the flags of compare-redis.
func parseCompare(args []string, stdout, stderr io.Writer) (compareOptions, error) {
	fs := newFlagSet("compare-redis", stderr)
	o := compareOptions{clients: 50, n: 100000}
	o.register(fs, "redis-benchmark -c", "redis-benchmark test", "go-redis alone")
	if err := parseFlags(fs, args, stdout); err != nil {
		return o, err
	}
	return o, o.check()
}

// register adds the flags compare-redis and compare-postgres share, with
// their defaults from o; tool is the native tool's client flag, test what
// it runs per request, bare the bare client's column.
func (o *compareOptions) register(fs *flag.FlagSet, tool, test, bare string) {
	o.mf.register(fs)
	fs.IntVar(&o.clients, "clients", o.clients, fmt.Sprintf("concurrent clients (%s, lockbench workers), 1..%d", tool, maxCompareClients))
	fs.IntVar(&o.n, "requests", o.n, fmt.Sprintf("requests per %s, and lock cycles for lockbench, per round, %d..%d", test, minCompareRequests, maxCompareRequests))
	fs.IntVar(&o.rounds, "rounds", defaultCompareRounds, fmt.Sprintf("rounds of the three measurements, interleaved, after one warm-up round, 1..%d; an even count runs as many with lockbench first as with the bare client first", maxCompareRounds))
	fs.Float64Var(&o.failBelow, "fail-below", 0, fmt.Sprintf("exit 4 when the median ratio of lockbench's rate to %s's is below R (0 < R ≤ %d; default off)", bare, maxFailBelow))
	fs.StringVar(&o.cpuProfile, "cpuprofile", "", fmt.Sprintf("write a CPU profile of the counted rounds to this file, samples labelled measure=bare (%s) or measure=lockbench: both run the same cycles, so `go tool pprof -tagfocus measure=lockbench` against `-tagfocus measure=bare` is the harness's cost function by function", bare))
}

// check checks the shared flags' values.
func (o *compareOptions) check() error {
	switch {
	case o.clients < 1 || o.clients > maxCompareClients:
		return usageErr("--clients: want 1..%d, got %d", maxCompareClients, o.clients)
	case o.n < minCompareRequests || o.n > maxCompareRequests:
		return usageErr("--requests: want %d..%d, got %d", minCompareRequests, maxCompareRequests, o.n)
	case o.rounds < 1 || o.rounds > maxCompareRounds:
		return usageErr("--rounds: want 1..%d, got %d", maxCompareRounds, o.rounds)
	case !(o.failBelow >= 0 && o.failBelow <= maxFailBelow): // NaN too
		return usageErr("--fail-below: want a ratio R with 0 < R ≤ %d (0: off), got %g", maxFailBelow, o.failBelow)
	}
	return nil
}

// runCompare is `lockbench compare-redis` (`make compare-redis`): the
// harness must not be what is measured, so run redis-benchmark with the same
// two commands a setnx lock cycle sends (SET … NX PX and the release
// script), the same client count and the same local Redis, then lockbench's
// setnx with zero hold, and print both lock-cycle rates and their ratio.
// The go-redis loop between them (same client settings, no harness) splits
// the gap into the Go client's share and the harness's. Beside the rates,
// each client's CPU per lock cycle (comparison.run).
func runCompare(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parseCompare(args, stdout, stderr)
	if err != nil {
		return err
	}
	bin, err := exec.LookPath("redis-benchmark")
	if err != nil {
		return fmt.Errorf("redis-benchmark not found: install redis-tools (Debian: apt-get install redis-tools)")
	}
	cluster, err := servers.Start(ctx, servers.Needs{Redis: 1}, servers.Options{})
	if err != nil {
		return err
	}
	defer cluster.Stop()
	addr := cluster.Redis[0].Addr
	host, port, _ := net.SplitHostPort(addr)

	// The release script, loaded so redis-benchmark can EVALSHA it as
	// lockbench does.
	rc := redis.NewClient(&redis.Options{Addr: addr})
	defer rc.Close()
	if err := redisutil.ReleaseScript.Load(ctx, rc).Err(); err != nil {
		return fmt.Errorf("loading the release script: %w", err)
	}
	sha := redisutil.ReleaseScript.Hash()
	// Before each measurement the keys the last one left are dropped:
	// redis-benchmark's SETs leave a key each, which Redis would expire
	// two seconds later while the next measurement runs. The loaded
	// script stays (FLUSHDB keeps the script cache).
	flush := func() error {
		if err := rc.FlushDB(ctx).Err(); err != nil {
			return fmt.Errorf("compare-redis: emptying the database between measurements: %w", err)
		}
		return nil
	}
	// bench runs one redis-benchmark test: its rate, and its CPU per
	// request.
	bench := func(cmd ...string) (cycleRate, error) {
		a := append([]string{"-h", host, "-p", port, "-c", strconv.Itoa(o.clients), "-n", strconv.Itoa(o.n), "-r", "1000000", "--csv"}, cmd...)
		c := exec.CommandContext(ctx, bin, a...)
		out, err := c.Output()
		if err != nil {
			return cycleRate{}, fmt.Errorf("redis-benchmark: %w", err)
		}
		rate, err := parseBenchCSV(out)
		return cycleRate{perSec: rate, cpu: childCPU(c.ProcessState) / time.Duration(o.n)}, err
	}

	sc := loadgen.DefaultScenario()
	sc.Name = "compare-redis"
	sc.Instances, sc.Workers, sc.Deliveries = 1, o.clients, 1
	sc.Payments = o.n
	// One key per cycle, never contended, as redis-benchmark's random
	// keys and the bare loop's are; a small bank, so that the store's
	// records stay in cache as any app's hot rows would (a million
	// accounts made the store's Enter and Finish cache misses, a cost of
	// that scenario, not of the harness).
	sc.LockKey = "payment"
	sc.Accounts = 1000
	sc.Hold, _ = loadgen.ParseHold("0s")
	sc.Warmup = 0
	sess := &session{ep: cluster.Endpoints(), stderr: stderr, stores: map[string]store.Store{}}
	defer sess.Close()
	if err := sess.serveMetrics(o.mf); err != nil {
		return err
	}

	fmt.Fprintf(stdout, "lock cycles/s: SET NX PX then EVALSHA of the release script, %d clients, %d cycles a measurement, local Redis\n", o.clients, o.n)
	fmt.Fprintf(stdout, "redis-benchmark's cycle rate is 1 / (1/SET rate + 1/EVALSHA rate); lockbench is `run --strategy setnx --hold 0 --lock-key payment --accounts 1000`\n")
	cmp := comparison{
		name:   "compare-redis",
		native: "redis-benchmark", bare: "go-redis alone", ours: "lockbench setnx",
		nativeShort: "redis-benchmark", bareShort: "go-redis",
		bareWhy:   "the Go client's cost against redis-benchmark's C",
		rounds:    o.rounds,
		failBelow: o.failBelow,
		profile:   o.cpuProfile,
		library:   []string{"github.com/redis/go-redis/"},
		settle:    flush,
		measure: [3]func() (cycleRate, error){
			func() (cycleRate, error) {
				set, err := bench("SET", "lockbench:acct:__rand_int__", "owner", "NX", "PX", "2000")
				if err != nil {
					return cycleRate{}, err
				}
				rel, err := bench("EVALSHA", sha, "1", "lockbench:acct:__rand_int__", "owner")
				if err != nil {
					return cycleRate{}, err
				}
				return cycleRate{perSec: 1 / (1/set.perSec + 1/rel.perSec), cpu: set.cpu + rel.cpu}, nil
			},
			func() (cycleRate, error) {
				return measured(ctx, "bare", func() (cycleRate, error) { return goRedisCycles(ctx, addr, o.clients, o.n) })
			},
			func() (cycleRate, error) {
				return measured(ctx, "lockbench", func() (cycleRate, error) { return lockbenchCycles(ctx, sess, "setnx", sc) })
			},
		},
	}
	return cmp.run(ctx, stdout, stderr)
}

// cycleRate is one measurement of a comparison: lock cycles per second,
// and the client's CPU time (user and system, from getrusage) per cycle:
// on a shared machine a much steadier figure than the rate, which moves
// with whatever else the cores are doing.
type cycleRate struct {
	perSec float64
	cpu    time.Duration
}

// comparison is a harness check (compare-redis, compare-postgres): one
// lock cycle measured three ways, with the server's own benchmark tool
// (native), with the Go client alone (bare: the strategy's client
// settings, no harness) and with lockbench.
type comparison struct {
	name string
	// native, bare and ours head the rate columns; nativeShort and
	// bareShort name them in the ratios' columns.
	native, bare, ours     string
	nativeShort, bareShort string
	// bareWhy says what the ratio of bare to native is.
	bareWhy string
	rounds  int
	// failBelow, when above 0, makes run return an error (exit 4) when the
	// median ratio of ours to bare is below it.
	failBelow float64
	// profile, when set, is the file the counted rounds' CPU profile goes
	// to.
	profile string
	// library is the import path prefixes of the bare client's library
	// (go-redis, pgx), whose calls are the yardstick of the profile's
	// split (printProfileSplit).
	library []string
	// measure holds the three measurements: native, bare and ours. A
	// round runs native first, then bare and ours in an order that
	// alternates from round to round (roundOrder).
	measure [3]func() (cycleRate, error)
	// settle, when set, runs before each measurement but the first,
	// untimed: it puts the server back in the state every measurement
	// starts from, so that none pays for what the one before it left
	// behind. Before the first there is nothing to clean, and cleaning
	// can mislead: an empty table just vacuumed tells Postgres's planner
	// that it is empty, and pgbench's prepared claim then scanned the
	// whole table for every row it added (660 cycles/s, against 9,000).
	settle func() error
}

// roundOrder is the order round r runs the measurements in: the native
// tool first, then the bare client and lockbench, lockbench first in the
// odd rounds. Whatever drifts within a round (the server's tables and
// memory grow with every cycle; a neighbour's load rises or falls) then
// favours each of the two in turn instead of always the one that runs
// first, and their ratio, taken within the round, carries no bias for
// the order.
func roundOrder(r int) [3]int {
	if r%2 == 1 {
		return [3]int{0, 2, 1}
	}
	return [3]int{0, 1, 2}
}

// round runs round r's three measurements (roundOrder) and returns them
// as native, bare, ours, with the share of the machine's CPU time the
// hypervisor stole while they ran (results.StealPercent; NaN when unknown).
func (c comparison) round(r int) (m [3]cycleRate, steal float64, err error) {
	t0 := results.ReadMachineTime()
	defer func() { steal = results.StealPercent(t0, results.ReadMachineTime()) }()
	for k, i := range roundOrder(r) {
		if c.settle != nil && (r > 0 || k > 0) {
			if err := c.settle(); err != nil {
				return m, 0, err
			}
		}
		if m[i], err = c.measure[i](); err != nil {
			return m, 0, err
		}
	}
	return m, 0, nil
}

// ErrBelowTarget is returned by compare-redis and compare-postgres with
// --fail-below R when lockbench's median ratio to the bare client is below
// R. It is a regression (errors.Is ErrRegression): the command exits 4.
var ErrBelowTarget = fmt.Errorf("%w: harness ratio below --fail-below", ErrRegression)

// run runs a warm-up round and c.rounds counted rounds, printing a row for
// each, then the medians and the closing ratio lines.
//
// The three run in turn (roundOrder), and each round's ratios are taken
// within the round: on a shared machine the rates drift by tens of
// percent over a minute, and a ratio of figures measured a minute apart
// would measure the drift. The medians of the rounds' ratios are the
// result. Ctrl-C ends it with the rounds done.
func (c comparison) run(ctx context.Context, stdout, stderr io.Writer) error {
	rp, err := openRoundsProfile(c.profile)
	if err != nil {
		return err
	}
	defer rp.stop()
	fmt.Fprintf(stdout, "cpu µs: each client's CPU time per lock cycle (user + system); harness: lockbench's less %s's\n\n", c.bare)
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "round\t%s\t%s\t%s\tlockbench/%s\tlockbench/%s\t%s/%s\tcpu µs %s\tcpu µs %s\tcpu µs lockbench\tcpu µs harness\tsteal %%\t\n",
		c.native, c.bare, c.ours, c.nativeShort, c.bareShort, c.bareShort, c.nativeShort, c.nativeShort, c.bareShort)
	var ms [][3]cycleRate
	var steals []float64
	// Round 0 warms up all three (connections, the Go heap, the server's
	// tables) and is shown but not counted.
	for r := range c.rounds + 1 {
		if r == 1 {
			// The profile covers the counted rounds.
			if err := rp.start(); err != nil {
				return err
			}
		}
		m, steal, err := c.round(r)
		if ctx.Err() != nil {
			break // interrupted: report the rounds done
		}
		if err != nil {
			return err
		}
		name := strconv.Itoa(r)
		if r == 0 {
			name = "warm-up"
		} else {
			ms, steals = append(ms, m), append(steals, steal)
		}
		row := roundFigures(m)
		fmt.Fprintf(tw, "%s\t%s\n", name, formatRow(row, steal))
		fmt.Fprintf(stderr, "%s: round %d of %d done (lockbench/%s %.2f)\n", c.name, r, c.rounds, c.bareShort, row[4])
	}
	if len(ms) == 0 {
		tw.Flush()
		fmt.Fprintln(stderr, "interrupted before a counted round finished: no ratio")
		return nil
	}
	// col is column i of every counted round.
	col := func(i int) []float64 {
		var xs []float64
		for _, m := range ms {
			xs = append(xs, roundFigures(m)[i])
		}
		return xs
	}
	var med [10]float64
	for i := range med {
		med[i] = median(col(i))
	}
	steal, medSteal := knownSteal(steals), math.NaN()
	if len(steal) > 0 {
		medSteal = median(steal)
	}
	fmt.Fprintf(tw, "median\t%s\n", formatRow(med, medSteal))
	tw.Flush()
	fmt.Fprintln(stdout)

	ours, vsBare, bareVsNative := col(3), col(4), col(5)
	labels := []string{"ratio lockbench / " + c.native + ":", "ratio lockbench / " + c.bare + ":", "ratio " + c.bareShort + " / " + c.native + ":"}
	width := 0
	for _, l := range labels {
		width = max(width, len(l))
	}
	line := func(i int, format string, args ...any) {
		fmt.Fprintf(stdout, "%-*s %s\n", width, labels[i], fmt.Sprintf(format, args...))
	}
	line(0, "%.2f (median of %d rounds, %s)", median(ours), len(ms), spread(ours))
	line(1, "%.2f (median of %d rounds, %s; the harness's own cost; target ≥ %.2f)",
		median(vsBare), len(ms), spread(vsBare), harnessTarget)
	line(2, "%.2f (%s)", median(bareVsNative), c.bareWhy)
	var cpuRatio []float64
	for _, m := range ms {
		cpuRatio = append(cpuRatio, float64(m[2].cpu)/float64(m[1].cpu))
	}
	fmt.Fprintf(stdout, "cpu per cycle (medians): %s %.1f µs, %s %.1f µs, lockbench %.1f µs; the harness %+.1f µs, lockbench / %s %.2f (target ≤ %.2f)\n",
		c.nativeShort, med[6], c.bare, med[7], med[8], med[9], c.bare, median(cpuRatio), 1/harnessTarget)
	p, err := rp.stop()
	if err != nil {
		return err
	}
	if p != nil {
		bare, ours := splitProfile(p, c.library)
		c.printProfileSplit(stdout, bare, ours, med[7])
	}
	if len(steal) > 0 {
		fmt.Fprintf(stdout, "steal (the hypervisor's share of this machine's CPU time, /proc/stat): median %.1f%% a round, %.1f%%–%.1f%%; a round with much of it measured the neighbours as well\n",
			medSteal, slices.Min(steal), slices.Max(steal))
	}
	if quiet := quietRatios(vsBare, steals); len(quiet) > 0 && len(quiet) < len(vsBare) {
		fmt.Fprintf(stdout, "quiet rounds (steal under %.0f%%): %d of %d, lockbench / %s %.2f by median (range %.2f–%.2f)\n",
			quietSteal, len(quiet), len(vsBare), c.bare, median(quiet), slices.Min(quiet), slices.Max(quiet))
	}
	if ctx.Err() != nil {
		fmt.Fprintf(stderr, "interrupted: %d of %d rounds done\n", len(ms), c.rounds)
		return nil
	}
	if got := median(vsBare); c.failBelow > 0 && got < c.failBelow {
		return fmt.Errorf("%w: lockbench / %s %.2f < %.2f", ErrBelowTarget, c.bare, got, c.failBelow)
	}
	return nil
}

// formatRow is the table cells of a round's figures (roundFigures) and
// its steal percentage ("-" when unknown).
func formatRow(f [10]float64, steal float64) string {
	st := "-"
	if !math.IsNaN(steal) {
		st = fmt.Sprintf("%.1f", steal)
	}
	return fmt.Sprintf("%.0f\t%.0f\t%.0f\t%.2f\t%.2f\t%.2f\t%.1f\t%.1f\t%.1f\t%+.1f\t%s\t", f[0], f[1], f[2], f[3], f[4], f[5], f[6], f[7], f[8], f[9], st)
}

// quietSteal is the steal percentage under which a round counts as quiet
// (quietRatios): 5%.
const quietSteal = 5.0

// quietRatios is the ratios of the rounds whose steal could be read and
// was under quietSteal: the rounds that measured the clients rather than
// the neighbours. The closing ratio lines stay the medians of all rounds;
// this is one more line beside them.
func quietRatios(ratios, steals []float64) []float64 {
	var q []float64
	for i, r := range ratios {
		if steals[i] < quietSteal { // false for NaN
			q = append(q, r)
		}
	}
	return q
}

// knownSteal is the rounds' steal percentages that could be read.
func knownSteal(steals []float64) []float64 {
	return slices.DeleteFunc(slices.Clone(steals), math.IsNaN)
}

// roundFigures are a round's columns: the three rates, the three ratios,
// the three CPU times per cycle (µs) and the harness's share of it.
func roundFigures(m [3]cycleRate) [10]float64 {
	us := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
	return [10]float64{
		m[0].perSec, m[1].perSec, m[2].perSec,
		m[2].perSec / m[0].perSec, m[2].perSec / m[1].perSec, m[1].perSec / m[0].perSec,
		us(m[0].cpu), us(m[1].cpu), us(m[2].cpu), us(m[2].cpu - m[1].cpu),
	}
}

// lockbenchCycles runs strategy name through sc on the session's servers
// and returns its lock-cycle rate, and the process's CPU per cycle while
// the load ran (loadgen.Options.LoadSpan: without the run's set-up, as the
// rate is).
func lockbenchCycles(ctx context.Context, sess *session, name string, sc loadgen.Scenario) (cycleRate, error) {
	info, ok := strategies.Lookup(name)
	if !ok {
		return cycleRate{}, fmt.Errorf("unknown strategy %q", name)
	}
	target, err := sess.target(info)
	if err != nil {
		return cycleRate{}, err
	}
	st, err := sess.store(ctx, sc.Store)
	if err != nil {
		return cycleRate{}, err
	}
	var cpu time.Duration
	o := loadgen.Options{Strategy: name, Scenario: sc, Lock: target.Config, Store: st,
		LoadSpan: func() func() {
			cpu0 := processCPU()
			return func() { cpu = processCPU() - cpu0 }
		}}
	endMetrics := sess.observe(&o, results.FaultNone, 0)
	run, err := loadgen.Run(ctx, o)
	endMetrics()
	if err != nil {
		return cycleRate{}, fmt.Errorf("%s: %s", name, servers.Redact(err.Error()))
	}
	s := run.Summary
	cycles := s.OpsPerSec * float64(s.DurationNs) / float64(time.Second)
	if cycles < 1 {
		return cycleRate{}, ctx.Err()
	}
	return cycleRate{perSec: s.OpsPerSec, cpu: time.Duration(float64(cpu) / cycles)}, nil
}

// measured runs f, one measurement of a round, with its CPU profile
// samples (and those of the goroutines it starts) labelled measure=name:
// bare or lockbench (--cpuprofile).
func measured(ctx context.Context, name string, f func() (cycleRate, error)) (m cycleRate, err error) {
	pprof.Do(ctx, pprof.Labels("measure", name), func(context.Context) { m, err = f() })
	return m, err
}

// processCPU is the user and system CPU time this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// childCPU is the user and system CPU time a finished child process used.
func childCPU(ps *os.ProcessState) time.Duration {
	if ps == nil {
		return 0
	}
	ru, ok := ps.SysUsage().(*syscall.Rusage)
	if !ok {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// spread describes how far the rounds' ratios xs leave their median in
// doubt: their range, and before it the median's 95% confidence interval
// (results.EstimateOf, from order statistics) when there are rounds
// enough for it to be narrower than the range (from 8: with 7 or fewer
// the interval is the range). On a shared 2-core machine one round's
// ratio can land 10% either side of the median; forty rounds put the
// median within about 0.01.
func spread(xs []float64) string {
	lo, hi := slices.Min(xs), slices.Max(xs)
	if e := results.EstimateOf(xs); e.CI && (e.Lo > lo || e.Hi < hi) {
		return fmt.Sprintf("95%% CI %.2f–%.2f, range %.2f–%.2f", e.Lo, e.Hi, lo, hi)
	}
	return fmt.Sprintf("range %.2f–%.2f", lo, hi)
}

// median returns the median of xs (the mean of the middle two for an even
// count); xs is not modified.
func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// parseBenchCSV reads the rps column of redis-benchmark --csv output.
func parseBenchCSV(out []byte) (float64, error) {
	lines := strings.Split(strings.TrimSpace(string(bytes.ReplaceAll(out, []byte("\r"), nil))), "\n")
	for _, l := range lines[1:] {
		f := strings.Split(l, ",")
		if len(f) >= 2 {
			return strconv.ParseFloat(strings.Trim(f[1], `"`), 64)
		}
	}
	return 0, fmt.Errorf("redis-benchmark: unexpected output %q", out)
}

// goRedisCycles runs n lock cycles (SET NX PX, then the release script)
// from clients goroutines with the client settings the strategies use and
// nothing else: no store, no histograms, no scheduling. It separates the
// Go client's cost from the harness's. The CPU is the process's over the
// loop.
func goRedisCycles(ctx context.Context, addr string, clients, n int) (cycleRate, error) {
	rc := redis.NewClient(redisutil.Options(addr, ""))
	defer rc.Close()
	var next atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	start, cpu0 := time.Now(), processCPU()
	for w := range clients {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), 1))
			for next.Add(1) <= int64(n) {
				key := redisutil.LockKey("bench:" + strconv.Itoa(r.IntN(1_000_000)))
				value := redisutil.OwnerValue("bench")
				if err := rc.SetNX(ctx, key, value, 2*time.Second).Err(); err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
				if err := redisutil.ReleaseScript.Run(ctx, rc, []string{key}, value).Err(); err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
			}
		})
	}
	wg.Wait()
	cpu, secs := processCPU()-cpu0, time.Since(start).Seconds()
	if err, _ := firstErr.Load().(error); err != nil {
		if errors.Is(err, context.Canceled) {
			return cycleRate{}, ctx.Err()
		}
		return cycleRate{}, fmt.Errorf("go-redis baseline: %w", err)
	}
	return cycleRate{perSec: float64(n) / secs, cpu: cpu / time.Duration(n)}, nil
}
