package cli

import (
	"github.com/redis/go-redis/v9"

	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/lockbench/lockbench/bench/faults"
	"github.com/lockbench/lockbench/loadgen"
	"github.com/lockbench/lockbench/loadgen/store"
	"github.com/lockbench/lockbench/servers"
	"github.com/lockbench/lockbench/strategies/redisutil"
)

// Ranges of compare-redis's flags.
const (
	maxCompareClients  = 1000
	minCompareRequests = 1000
	maxCompareRequests = 10_000_000
	maxCompareRounds   = 100
)

// compareOptions are the parsed and checked flags of compare-redis.
type compareOptions struct {
	mf                 metricsFlag
	clients, n, rounds int
}

// parseCompare parses and checks the flags of compare-redis.
func parseCompare(args []string, stdout, stderr io.Writer) (compareOptions, error) {
	var o compareOptions
	fs := newFlagSet("compare-redis", stderr)
	o.mf.register(fs)
	fs.IntVar(&o.clients, "clients", 50, fmt.Sprintf("concurrent clients (redis-benchmark -c, lockbench workers), 1..%d", maxCompareClients))
	fs.IntVar(&o.n, "requests", 50000, fmt.Sprintf("requests per redis-benchmark test, and lock cycles for lockbench, per round, %d..%d", minCompareRequests, maxCompareRequests))
	fs.IntVar(&o.rounds, "rounds", 7, fmt.Sprintf("rounds of the three measurements, interleaved, after one warm-up round, 1..%d", maxCompareRounds))
	if err := parseFlags(fs, args, stdout); err != nil {
		return o, err
	}
	switch {
	case o.clients < 1 || o.clients > maxCompareClients:
		return o, usageErr("--clients: want 1..%d, got %d", maxCompareClients, o.clients)
	case o.n < minCompareRequests || o.n > maxCompareRequests:
		return o, usageErr("--requests: want %d..%d, got %d", minCompareRequests, maxCompareRequests, o.n)
	case o.rounds < 1 || o.rounds > maxCompareRounds:
		return o, usageErr("--rounds: want 1..%d, got %d", maxCompareRounds, o.rounds)
	}
	return o, nil
}

// runCompare is `lockbench compare-redis` (`make compare-redis`): the
// harness must not be what is measured, so run redis-benchmark with the same
// two commands a setnx lock cycle sends (SET … NX PX and the release
// script), the same client count and the same local Redis, then lockbench's
// setnx with zero hold, and print both lock-cycle rates and their ratio.
// The go-redis loop between them (same client settings, no harness) splits
// the gap into the Go client's share and the harness's.
//
// The three run in turn, --rounds times after a warm-up round, and each
// round's ratios are taken within the round: on a shared machine the rates
// drift by tens of percent over a minute, and a ratio of figures measured a
// minute apart would measure the drift. The medians of the rounds' ratios
// are the result.
func runCompare(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parseCompare(args, stdout, stderr)
	if err != nil {
		return err
	}
	mf := o.mf
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
	err = redisutil.ReleaseScript.Load(ctx, rc).Err()
	rc.Close()
	if err != nil {
		return fmt.Errorf("loading the release script: %w", err)
	}
	sha := redisutil.ReleaseScript.Hash()
	bench := func(cmd ...string) (float64, error) {
		a := append([]string{"-h", host, "-p", port, "-c", strconv.Itoa(o.clients), "-n", strconv.Itoa(o.n), "-r", "1000000", "--csv"}, cmd...)
		out, err := exec.CommandContext(ctx, bin, a...).Output()
		if err != nil {
			return 0, fmt.Errorf("redis-benchmark: %w", err)
		}
		return parseBenchCSV(out)
	}

	sc := loadgen.DefaultScenario()
	sc.Name = "compare-redis"
	sc.Instances, sc.Workers, sc.Deliveries = 1, o.clients, 1
	sc.Payments = o.n
	sc.Accounts = 1_000_000 // no contention: every acquire succeeds at once
	sc.Hold, _ = loadgen.ParseHold("0s")
	sc.Warmup = 0
	sess := &session{ep: cluster.Endpoints(), stderr: stderr, stores: map[string]store.Store{}}
	defer sess.Close()
	if err := sess.serveMetrics(mf); err != nil {
		return err
	}

	fmt.Fprintf(stdout, "lock cycles/s: SET NX PX then EVALSHA of the release script, %d clients, %d cycles a measurement, local Redis\n", o.clients, o.n)
	fmt.Fprintf(stdout, "redis-benchmark's cycle rate is 1 / (1/SET rate + 1/EVALSHA rate); lockbench is `run --strategy setnx --hold 0`\n\n")
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "round\tredis-benchmark\tgo-redis alone\tlockbench setnx\tlockbench/redis-benchmark\tlockbench/go-redis\tgo-redis/redis-benchmark\t")
	// round measures the three once; a round cut short by Ctrl-C is not one.
	round := func() (cycle, alone, lb float64, err error) {
		setRate, err := bench("SET", "lockbench:acct:__rand_int__", "owner", "NX", "PX", "2000")
		if err != nil {
			return 0, 0, 0, err
		}
		relRate, err := bench("EVALSHA", sha, "1", "lockbench:acct:__rand_int__", "owner")
		if err != nil {
			return 0, 0, 0, err
		}
		if alone, err = goRedisCycles(ctx, addr, o.clients, o.n); err != nil {
			return 0, 0, 0, err
		}
		run, err := sess.run(ctx, "setnx", sc, faults.Spec{})
		if err != nil {
			return 0, 0, 0, err
		}
		return 1 / (1/setRate + 1/relRate), alone, run.Summary.OpsPerSec, ctx.Err()
	}
	var ours, theirs, plain []float64
	// Round 0 warms up all three (connections, the Go heap, Redis's
	// dictionaries) and is shown but not counted.
	for r := range o.rounds + 1 {
		cycle, alone, lb, err := round()
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
			theirs, plain, ours = append(theirs, cycle), append(plain, alone), append(ours, lb)
		}
		fmt.Fprintf(tw, "%s\t%.0f\t%.0f\t%.0f\t%.2f\t%.2f\t%.2f\t\n", name, cycle, alone, lb, lb/cycle, lb/alone, alone/cycle)
		fmt.Fprintf(stderr, "compare-redis: round %d of %d done (lockbench/redis-benchmark %.2f)\n", r, o.rounds, lb/cycle)
	}
	if len(ours) == 0 {
		tw.Flush()
		fmt.Fprintln(stderr, "interrupted before a counted round finished: no ratio")
		return nil
	}
	ratio := func(a, b []float64) []float64 {
		out := make([]float64, len(a))
		for i := range a {
			out[i] = a[i] / b[i]
		}
		return out
	}
	fmt.Fprintf(tw, "median\t%.0f\t%.0f\t%.0f\t%.2f\t%.2f\t%.2f\t\n", median(theirs), median(plain), median(ours),
		median(ratio(ours, theirs)), median(ratio(ours, plain)), median(ratio(plain, theirs)))
	tw.Flush()
	fmt.Fprintln(stdout)
	fmt.Fprintf(stdout, "ratio lockbench / redis-benchmark: %.2f (median of %d rounds, range %.2f–%.2f; target ≥ 0.80)\n",
		median(ratio(ours, theirs)), len(ours), slices.Min(ratio(ours, theirs)), slices.Max(ratio(ours, theirs)))
	fmt.Fprintf(stdout, "ratio lockbench / go-redis alone:  %.2f (the harness's own cost)\n", median(ratio(ours, plain)))
	fmt.Fprintf(stdout, "ratio go-redis / redis-benchmark:  %.2f (the Go client's cost against redis-benchmark's C)\n", median(ratio(plain, theirs)))
	if ctx.Err() != nil {
		fmt.Fprintf(stderr, "interrupted: %d of %d rounds done\n", len(ours), o.rounds)
	}
	return nil
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

// goRedisCycles runs lock cycles (SET NX PX, then the release script) with
// the client settings the strategies use and nothing else: no store, no
// histograms, no scheduling. It separates the Go client's cost from the
// harness's.
func goRedisCycles(ctx context.Context, addr string, clients, n int) (float64, error) {
	rc := redis.NewClient(redisutil.Options(addr, ""))
	defer rc.Close()
	var next atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	start := time.Now()
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
	if err, _ := firstErr.Load().(error); err != nil {
		return 0, fmt.Errorf("go-redis baseline: %w", err)
	}
	return float64(n) / time.Since(start).Seconds(), nil
}
