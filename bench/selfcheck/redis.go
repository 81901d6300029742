package selfcheck

import (
	"bytes"
	"context"
	"errors"
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

	"github.com/redis/go-redis/v9"

	"github.com/lockbench/lockbench/servers"
	"github.com/lockbench/lockbench/strategies/redisutil"
)

// runRedis is Redis's run, `lockbench compare-redis` (`make
// compare-redis`): the harness must not be what is measured, so run
// redis-benchmark with the same two commands a setnx lock cycle sends (SET
// … NX PX and the release script), the same client count and the same
// local Redis, then lockbench's setnx with zero hold, and print both
// lock-cycle rates and their ratio. The go-redis loop between them (same
// client settings, no harness) splits the gap into the Go client's share
// and the harness's. Beside the rates, each client's CPU per lock cycle
// (comparison.run).
func runRedis(ctx context.Context, cfg Config, open OpenHarness, stdout, stderr io.Writer) error {
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
	rb := redisBench{bin: bin, host: host, port: port, clients: cfg.Clients, requests: cfg.Requests}

	sc := lockbenchScenario("compare-redis", cfg.Clients, cfg.Requests)
	h, err := open(cluster.Endpoints())
	if err != nil {
		return err
	}
	defer h.Close()

	fmt.Fprintf(stdout, "lock cycles/s: SET NX PX then EVALSHA of the release script, %d clients, %d cycles a measurement, local Redis\n", cfg.Clients, cfg.Requests)
	fmt.Fprintf(stdout, "redis-benchmark's cycle rate is 1 / (1/SET rate + 1/EVALSHA rate); lockbench is `run --strategy setnx --hold 0 --lock-key payment --accounts 1000`\n")
	cmp := comparison{
		name:   "compare-redis",
		native: "redis-benchmark", bare: "go-redis alone", ours: "lockbench setnx",
		nativeShort: "redis-benchmark", bareShort: "go-redis",
		bareWhy:   "the Go client's cost against redis-benchmark's C",
		rounds:    cfg.Rounds,
		failBelow: cfg.FailBelow,
		profile:   cfg.CPUProfile,
		library:   []string{"github.com/redis/go-redis/"},
		settle:    func() error { return flushBetween(ctx, rc) },
		measure: [3]func() (cycleRate, error){
			func() (cycleRate, error) { return rb.cycles(ctx, sha) },
			func() (cycleRate, error) {
				return measured(ctx, "bare", func() (cycleRate, error) { return goRedisCycles(ctx, addr, cfg.Clients, cfg.Requests) })
			},
			func() (cycleRate, error) {
				return measured(ctx, "lockbench", func() (cycleRate, error) { return lockbenchCycles(ctx, h, "setnx", sc) })
			},
		},
	}
	return cmp.run(ctx, stdout, stderr)
}

// flushBetween drops the keys the last measurement left: redis-benchmark's
// SETs leave a key each, which Redis would expire two seconds later while
// the next measurement runs. The loaded script stays (FLUSHDB keeps the
// script cache).
func flushBetween(ctx context.Context, rc *redis.Client) error {
	if err := rc.FlushDB(ctx).Err(); err != nil {
		return fmt.Errorf("compare-redis: emptying the database between measurements: %w", err)
	}
	return nil
}

// redisBench is compare-redis's redis-benchmark command: clients clients,
// requests requests a test, against host:port.
type redisBench struct {
	bin, host, port   string
	clients, requests int
}

// cycles is redis-benchmark's lock cycle: a SET NX PX test, then an
// EVALSHA test of the release script (sha); the cycle's rate is
// 1 / (1/SET rate + 1/EVALSHA rate), its CPU the two tests'.
func (b redisBench) cycles(ctx context.Context, sha string) (cycleRate, error) {
	set, err := b.test(ctx, "SET", "lockbench:acct:__rand_int__", "owner", "NX", "PX", "2000")
	if err != nil {
		return cycleRate{}, err
	}
	rel, err := b.test(ctx, "EVALSHA", sha, "1", "lockbench:acct:__rand_int__", "owner")
	if err != nil {
		return cycleRate{}, err
	}
	return cycleRate{perSec: 1 / (1/set.perSec + 1/rel.perSec), cpu: set.cpu + rel.cpu}, nil
}

// test runs one redis-benchmark test: its rate, and its CPU per request.
func (b redisBench) test(ctx context.Context, cmd ...string) (cycleRate, error) {
	a := append([]string{"-h", b.host, "-p", b.port, "-c", strconv.Itoa(b.clients), "-n", strconv.Itoa(b.requests), "-r", "1000000", "--csv"}, cmd...)
	c := exec.CommandContext(ctx, b.bin, a...)
	out, err := c.Output()
	if err != nil {
		return cycleRate{}, fmt.Errorf("redis-benchmark: %w", err)
	}
	rate, err := parseBenchCSV(out)
	return cycleRate{perSec: rate, cpu: childCPU(c.ProcessState) / time.Duration(b.requests)}, err
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
