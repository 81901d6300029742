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
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockbench/lockbench/bench/servers"
	"github.com/lockbench/lockbench/loadgen"
	"github.com/lockbench/lockbench/loadgen/store"
	"github.com/lockbench/lockbench/strategies/redisutil"
)

// runCompare is `lockbench compare-redis` (`make compare-redis`): the
// harness must not be what is measured, so run redis-benchmark with the same
// two commands a setnx lock cycle sends (SET … NX PX and the release
// script), the same client count and the same local Redis, then lockbench's
// setnx with zero hold, and print both lock-cycle rates and their ratio.
func runCompare(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("compare-redis", stderr)
	clients := fs.Int("clients", 50, "concurrent clients (redis-benchmark -c, lockbench workers)")
	n := fs.Int("requests", 100000, "requests per redis-benchmark test, and lock cycles for lockbench")
	if err := parseFlags(fs, args, stdout); err != nil {
		return err
	}
	if *clients < 1 || *clients > 1000 {
		return usageErr("--clients: want 1..1000, got %d", *clients)
	}
	if *n < 1000 {
		return usageErr("--requests: want ≥ 1000, got %d", *n)
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
	err = redisutil.ReleaseScript.Load(ctx, rc).Err()
	rc.Close()
	if err != nil {
		return fmt.Errorf("loading the release script: %w", err)
	}
	sha := redisutil.ReleaseScript.Hash()
	bench := func(cmd ...string) (float64, error) {
		a := append([]string{"-h", host, "-p", port, "-c", strconv.Itoa(*clients), "-n", strconv.Itoa(*n), "-r", "1000000", "--csv"}, cmd...)
		out, err := exec.CommandContext(ctx, bin, a...).Output()
		if err != nil {
			return 0, fmt.Errorf("redis-benchmark: %w", err)
		}
		return parseBenchCSV(out)
	}
	setRate, err := bench("SET", "lockbench:acct:__rand_int__", "owner", "NX", "PX", "2000")
	if err != nil {
		return err
	}
	relRate, err := bench("EVALSHA", sha, "1", "lockbench:acct:__rand_int__", "owner")
	if err != nil {
		return err
	}
	cycle := 1 / (1/setRate + 1/relRate)
	plain, err := goRedisCycles(ctx, addr, *clients, *n)
	if err != nil {
		return err
	}

	sc := loadgen.DefaultScenario()
	sc.Name = "compare-redis"
	sc.Instances, sc.Workers, sc.Deliveries = 1, *clients, 1
	sc.Payments = *n
	sc.Accounts = 1_000_000 // no contention: every acquire succeeds at once
	sc.Hold, _ = loadgen.ParseHold("0s")
	sc.Warmup = 0
	sess := &session{ep: cluster.Endpoints(), stderr: stderr, stores: map[string]store.Store{}}
	defer sess.Close()
	start := time.Now()
	r, err := sess.run(ctx, "setnx", sc, nil)
	if err != nil {
		return err
	}
	ours := r.Summary.OpsPerSec
	fmt.Fprintf(stdout, "redis-benchmark  SET NX PX   %10.0f req/s  (-c %d -n %d)\n", setRate, *clients, *n)
	fmt.Fprintf(stdout, "redis-benchmark  EVALSHA rel %10.0f req/s\n", relRate)
	fmt.Fprintf(stdout, "redis-benchmark  lock cycle  %10.0f cycles/s  (1 / (1/set + 1/release))\n", cycle)
	fmt.Fprintf(stdout, "lockbench setnx  lock cycle  %10.0f cycles/s  (%d workers, hold 0, %s)\n", ours, *clients, time.Since(start).Round(time.Millisecond))
	fmt.Fprintf(stdout, "go-redis alone   lock cycle  %10.0f cycles/s  (same client settings and commands, no harness)\n", plain)
	fmt.Fprintf(stdout, "ratio lockbench / redis-benchmark: %.2f (target ≥ 0.80)\n", ours/cycle)
	fmt.Fprintf(stdout, "ratio lockbench / go-redis alone:  %.2f (the harness's own cost)\n", ours/plain)
	fmt.Fprintf(stdout, "ratio go-redis / redis-benchmark:  %.2f (the Go client's cost against redis-benchmark's C)\n", plain/cycle)
	return nil
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
