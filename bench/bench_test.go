package bench

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lockbench/lockbench/loadgen"
	"github.com/lockbench/lockbench/loadgen/store"
	"github.com/lockbench/lockbench/servers"
	_ "github.com/lockbench/lockbench/servers/adapterenv" // adapters reach the servers
	"github.com/lockbench/lockbench/strategies"
	"github.com/lockbench/lockbench/strategies/adapter"
	_ "github.com/lockbench/lockbench/strategies/all"
)

// contenders are the contention levels of BenchmarkLock: lock holders
// racing for one key. 16 is the most, because each contender is an
// instance with its own connections: pg-onconflict warms 8 per instance,
// and 32 instances (256 connections, plus those of the previous run still
// closing) exhaust a Postgres with max_connections 300.
var contenders = []int{1, 4, 16}

const (
	// startTimeout bounds starting the local servers: 3 minutes (initdb and
	// a first apt-get install can be slow).
	startTimeout = 3 * time.Minute
	// runTimeout bounds one benchmark run: 5 minutes.
	runTimeout = 5 * time.Minute
	// benchHold is the work inside the lock besides the store's read and
	// write: none. Go sleeps shorter than a millisecond take about a
	// millisecond on an idle process (the netpoller waits in whole
	// milliseconds), so any hold would swamp the lock's own cost.
	benchHold = "0s"
	// harnessAccounts spreads the harness ceiling's payments over enough
	// accounts that the store's per-account bookkeeping is not contended.
	harnessAccounts = 10_000
)

// unitLines tell benchstat which way is better for the custom units (the
// "Unit" metadata lines of the Go benchmark format).
var unitLines = []string{
	"Unit ops/s Better=higher",
	"Unit ops/cpu-s Better=higher",
	"Unit payments/s Better=higher",
	"Unit payments/cpu-s Better=higher",
}

// lockServers are the servers the benchmarks run against, started at most
// once, on first use, and stopped by TestMain.
var lockServers struct {
	once    sync.Once
	ep      servers.Endpoints
	cluster *servers.Cluster
	err     error
}

// skipOnce prints the reason BenchmarkLock is skipped once, not per -count.
var skipOnce sync.Once

// endpoints returns the servers' endpoints, starting the local servers the
// environment does not name the first time it is called.
func endpoints() (servers.Endpoints, error) {
	s := &lockServers
	s.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
		defer cancel()
		need := servers.NeedsOf(strategies.All())
		s.ep, s.cluster, s.err = servers.Ensure(ctx, need, servers.EndpointsFromEnv(), servers.Options{})
		if s.err != nil {
			s.err = errors.New(servers.Redact(s.err.Error()))
		}
	})
	return s.ep, s.err
}

func TestMain(m *testing.M) {
	// Instance processes and etcd members re-execute this binary.
	loadgen.MaybeRunChild()
	flag.Parse()
	if f := flag.Lookup("test.bench"); f != nil && f.Value.String() != "" {
		for _, l := range unitLines {
			fmt.Println(l)
		}
	}
	code := m.Run()
	if err := lockServers.cluster.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "bench: stopping servers:", err)
	}
	os.Exit(code)
}

// BenchmarkLock measures lock cycles of every registered strategy with 1, 4
// and 16 contenders on one key (see the package documentation for the
// shape of the load and what each metric means).
func BenchmarkLock(b *testing.B) {
	ep, err := endpoints()
	if err != nil {
		msg := fmt.Sprintf("BenchmarkLock skipped: the lock servers are unavailable (set %s, %s, %s, %s and %s to use your own): %v",
			servers.EnvRedisAddrs, servers.EnvEtcdEndpoints, servers.EnvPostgresDSN, servers.EnvZKServers, servers.EnvNATSURL, err)
		// go test shows a benchmark's skip message only with -v: say it
		// once on stderr too.
		skipOnce.Do(func() { fmt.Fprintln(os.Stderr, msg) })
		b.Skip(msg)
	}
	st, err := dialStore()
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	var pg *store.Postgres // the Postgres store, for transactional strategies
	defer func() {
		if pg != nil {
			_ = pg.Close()
		}
	}()
	for _, info := range strategies.All() {
		target, err := servers.TargetFor(info.Need, ep, lockServers.cluster)
		if err != nil {
			b.Fatal(servers.Redact(err.Error()))
		}
		var use store.Store = st
		if info.Transactional {
			// It takes no lock: its transactions run on the Postgres store.
			if pg == nil {
				if pg, err = store.NewPostgres(context.Background(), ep.PostgresDSN); err != nil {
					b.Fatal(servers.Redact(err.Error()))
				}
			}
			use = pg
		}
		missing := runtimeMissing(info.Name)
		for _, n := range contenders {
			b.Run("strategy="+info.Name+"/contenders="+strconv.Itoa(n), func(b *testing.B) {
				if missing != nil {
					b.Skip(missing)
				}
				benchLock(b, info, n, target.Config, use)
			})
		}
	}
}

// runtimeMissing says, in one line, what a shipped adapter needs that this
// machine lacks (its runtime or its modules), printed once on stderr since
// go test shows a benchmark's skip message only with -v; nil for the rest.
func runtimeMissing(name string) error {
	if !adapter.IsBuiltin(name) {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	if _, err := adapter.BuiltinCommand(ctx, name); err != nil {
		err = fmt.Errorf("BenchmarkLock/strategy=%s skipped: %v", name, err)
		fmt.Fprintln(os.Stderr, err)
		return err
	}
	return nil
}

// benchLock runs b.N lock cycles of strategy info with n contenders.
func benchLock(b *testing.B, info strategies.Info, n int, lock strategies.Config, st store.Store) {
	b.Helper()
	name := info.Name
	sc := loadgen.DefaultScenario()
	sc.Name = "bench"
	if info.Transactional {
		sc.Store = loadgen.StorePostgres
	}
	sc.Instances, sc.Workers, sc.Deliveries = n, 1, n
	sc.Accounts = 1
	sc.Payments = (b.N + n - 1) / n
	sc.Hold, _ = loadgen.ParseHold(benchHold)
	sc.Rate = 0

	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	r, err := loadgen.Run(ctx, loadgen.Options{Strategy: strategies.MustLookup(name), Scenario: sc, Lock: lock, Store: st})
	if err != nil {
		b.Fatal(servers.Redact(err.Error()))
	}
	s := r.Summary
	acq := s.Latency["acquire"]
	b.ReportMetric(float64(s.DurationNs)/float64(max(s.Deliveries, 1)), "ns/op")
	b.ReportMetric(float64(acq.P50), "acquire-p50-ns")
	b.ReportMetric(float64(acq.P99), "acquire-p99-ns")
	b.ReportMetric(s.OpsPerSec, "ops/s")
	b.ReportMetric(float64(s.UnsafeCount()), "unsafe")
	// Cycles that gave up (--acquire-timeout) or failed are part of the
	// result, not a failure of the benchmark: ns/op counts them as
	// attempted, ops/s only counts cycles completed.
	b.ReportMetric(float64(errorCount(s.Errors)+s.NotAcquired), "failed")
}

// BenchmarkHarnessCeiling measures the load generator itself: nolock, no
// hold, one instance with GOMAXPROCS workers, recording on. ops/cpu-s is
// lock cycles per CPU-second spent by this process (all goroutines) while
// the load runs — dispatch, the store's Enter and Finish, the latency
// records and their collection, the deadlines — without the run's set-up
// (the payment stream, the store's Reset) or its judging: the harness's
// cost per cycle, per core.
func BenchmarkHarnessCeiling(b *testing.B) {
	sc := loadgen.DefaultScenario()
	sc.Name = "harness"
	sc.Instances, sc.Workers, sc.Deliveries = 1, runtime.GOMAXPROCS(0), 1
	sc.Accounts = harnessAccounts
	sc.Payments = b.N
	sc.Hold, _ = loadgen.ParseHold("0s")
	sc.Rate = 0
	st := store.NewMemory()
	defer st.Close()

	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	var cpu time.Duration
	r, err := loadgen.Run(ctx, loadgen.Options{Strategy: strategies.MustLookup("nolock"), Scenario: sc, Store: st, Reporter: loadgen.LoadSpan(loadSpan(b, cpuTime, &cpu))})
	if err != nil {
		b.Fatal(err)
	}
	s := r.Summary
	b.ReportMetric(float64(s.DurationNs)/float64(max(s.Deliveries, 1)), "ns/op")
	b.ReportMetric(s.OpsPerSec, "ops/s")
	if cpu > 0 {
		b.ReportMetric(float64(s.Deliveries)/cpu.Seconds(), "ops/cpu-s")
	}
}

// remoteStore is the tiny bank's memory store reached over a loopback
// connection, as a real storage service would be (and as instance
// processes reach it): the critical section is a read and a write, each a
// round trip. That is what lets a missing lock show: two holders are
// inside at once for the length of a round trip, not of a function call.
// Reset and Counts, the judge's side, stay in-process.
type remoteStore struct {
	*store.Memory
	client *store.Client
	ln     net.Listener
}

var _ store.Store = (*remoteStore)(nil)

// dialStore serves a fresh memory store on a loopback port and connects to
// it.
func dialStore() (*remoteStore, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	mem := store.NewMemory()
	go func() { _ = store.Serve(ln, mem) }()
	client, err := store.Dial(context.Background(), ln.Addr().String())
	if err != nil {
		ln.Close()
		return nil, err
	}
	return &remoteStore{Memory: mem, client: client, ln: ln}, nil
}

// Enter reads over the connection.
func (s *remoteStore) Enter(ctx context.Context, r store.EnterReq) (store.EnterResp, error) {
	return s.client.Enter(ctx, r)
}

// Finish writes over the connection.
func (s *remoteStore) Finish(ctx context.Context, r store.FinishReq) (store.FinishResp, error) {
	return s.client.Finish(ctx, r)
}

// Close closes the connection, the listener and the store.
func (s *remoteStore) Close() error {
	return errors.Join(s.client.Close(), s.ln.Close(), s.Memory.Close())
}

// loadSpan is a run's load span (loadgen.LoadSpan) for benchmark b: the timer runs over the
// load alone, and *cpu is what clock (cpuTime or cpuTimeAll) counted over
// it. The set-up's garbage (and the last -count run's) is collected first,
// so that the timed part pays only for what its own cycles make.
func loadSpan(b *testing.B, clock func() time.Duration, cpu *time.Duration) func() func() {
	return func() func() {
		runtime.GC()
		b.ResetTimer()
		cpu0 := clock()
		return func() {
			*cpu = clock() - cpu0
			b.StopTimer()
		}
	}
}

// cpuTime is the user and system CPU time used by this process so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func errorCount(m map[string]int64) int64 {
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}

// transportLock is the lock config of the transport benchmarks' strategy
// name: none for nolock, else the servers it needs (Redis), started here
// and stopped when b ends; false, having said so, when they cannot start.
func transportLock(b *testing.B, name string) (strategies.Config, bool) {
	if name == "nolock" {
		return strategies.Config{}, true
	}
	info, _ := strategies.Lookup(name)
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	ep, cluster, err := servers.Ensure(ctx, servers.NeedsOf([]strategies.Info{info}), servers.EndpointsFromEnv(), servers.Options{})
	cancel()
	if err != nil {
		b.Logf("%s skipped: its servers are unavailable: %s", name, servers.Redact(err.Error()))
		return strategies.Config{}, false
	}
	b.Cleanup(func() { _ = cluster.Stop() })
	target, err := servers.TargetFor(info.Need, ep, cluster)
	if err != nil {
		b.Fatal(servers.Redact(err.Error()))
	}
	return target.Config, true
}

// runTransport is one transport benchmark: b.N payments (at least 1,000)
// of strategy name, 2 instances in mode (placed by sp, when set; local
// instance processes reach the store by transport), one delivery each, no
// hold, the memory store, closed loop; it reports ns/op, payments/s,
// payments/cpu-s and switches/payment (context switches; both of this
// process and its children; with agents, which run in this process and
// reap their instance processes just after the load, once those are
// reaped).
func runTransport(b *testing.B, name, mode, transport string, lock strategies.Config, sp loadgen.Spawner) {
	sc := loadgen.DefaultScenario()
	sc.Name = "transport"
	sc.Instances, sc.Deliveries, sc.InstanceMode = 2, 1, loadgen.InstanceMode(mode)
	sc.Payments = max(b.N, 1000)
	sc.Hold, _ = loadgen.ParseHold("0s")
	sc.Rate = 0
	st := store.NewMemory()
	defer st.Close()
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	var cpu, cpu0 time.Duration
	var sw, sw0 int64
	span := loadSpan(b, cpuTimeAll, &cpu)
	o := loadgen.Options{Strategy: strategies.MustLookup(name), Scenario: sc, Lock: lock, Store: st, Spawner: sp}
	timer := loadgen.LoadSpan(func() func() {
		end := span()
		cpu0, sw0 = usageAll()
		return func() {
			end()
			_, n := usageAll()
			sw = n - sw0
		}
	})
	o.Reporter = timer
	if mode == "process" {
		o.StoreTransport = transport
		o.Reporter = loadgen.Events(func(e loadgen.Event) {
			if e.Kind == loadgen.EventFallback {
				b.Fatalf("store transport %s refused: %s", transport, e.Why)
			}
			timer(e)
		})
	}
	r, err := loadgen.Run(ctx, o)
	if err != nil {
		b.Fatal(servers.Redact(err.Error()))
	}
	s := r.Summary
	if s.Processed != s.Payments {
		b.Fatalf("processed %d of %d payments", s.Processed, s.Payments)
	}
	if sp != nil {
		// The agents reap their instances after these reported "done":
		// until then the instances' CPU is not this process's children's.
		if !childrenGone(10 * time.Second) {
			b.Fatal("the agents' instance processes did not exit within 10s")
		}
		c, n := usageAll()
		cpu, sw = c-cpu0, n-sw0
	}
	b.ReportMetric(float64(s.DurationNs)/float64(max(s.Payments, 1)), "ns/op")
	b.ReportMetric(s.PaymentsPerSec, "payments/s")
	if cpu > 0 {
		b.ReportMetric(float64(s.Payments)/cpu.Seconds(), "payments/cpu-s")
	}
	b.ReportMetric(float64(sw)/float64(max(s.Payments, 1)), "switches/payment")
}

// BenchmarkProcessTransport measures what instance processes cost over
// goroutine instances: nolock (the harness and the transport alone) and
// setnx (a real lock on Redis), 2 instances × 8 workers, one delivery per
// payment, no hold, the memory store, closed loop; instance processes with
// each store transport (sync: a round trip for the Enter and one for the
// Finish; sequenced: one-way, docs/seq-store.md). payments/s is the wall
// rate; payments/cpu-s divides the payments by the CPU this process and its
// instance processes spent during the load (not the servers'), which a
// shared machine disturbs far less than the wall rate. Compare the modes'
// ratio within one run.
func BenchmarkProcessTransport(b *testing.B) {
	for _, name := range []string{"nolock", "setnx"} {
		lock, ok := transportLock(b, name)
		if !ok {
			continue
		}
		b.Run("strategy="+name+"/mode=goroutine", func(b *testing.B) {
			runTransport(b, name, "goroutine", "", lock, nil)
		})
		for _, transport := range []string{loadgen.TransportSync, loadgen.TransportSequenced} {
			b.Run("strategy="+name+"/mode=process/transport="+transport, func(b *testing.B) {
				runTransport(b, name, "process", transport, lock, nil)
			})
		}
	}
}

// childrenGone waits up to d until this process has no instance process
// left (from /proc: a child of this process running this binary, as
// instances do; the servers it started are children too, and stay), and
// reports whether it has none.
func childrenGone(d time.Duration) bool {
	self := strconv.Itoa(os.Getpid())
	// A stat line is "pid (comm) state ppid …"; comm may hold spaces.
	split := func(stat []byte) (comm string, rest []string) {
		i, j := bytes.IndexByte(stat, '('), bytes.LastIndexByte(stat, ')')
		if i < 0 || j < i {
			return "", nil
		}
		return string(stat[i+1 : j]), strings.Fields(string(stat[j+1:]))
	}
	own, _ := os.ReadFile("/proc/self/stat")
	exe, _ := split(own)
	deadline := time.Now().Add(d)
	for {
		found := false
		dirs, _ := os.ReadDir("/proc")
		for _, e := range dirs {
			if e.Name()[0] < '0' || e.Name()[0] > '9' {
				continue
			}
			stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
			if err != nil {
				continue
			}
			if comm, f := split(stat); comm == exe && len(f) > 1 && f[1] == self {
				found = true
				break
			}
		}
		if !found {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// usageAll is the CPU time (user and system) and the context switches
// (voluntary and involuntary) of this process and its reaped children
// (instance processes) so far. Each switch is a sleep and a wake-up,
// which on these VMs cost more than the syscalls around them: what
// instance processes add over goroutines.
func usageAll() (cpu time.Duration, switches int64) {
	var self, kids syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &self) != nil || syscall.Getrusage(syscall.RUSAGE_CHILDREN, &kids) != nil {
		return 0, 0
	}
	cpu = time.Duration(self.Utime.Nano() + self.Stime.Nano() + kids.Utime.Nano() + kids.Stime.Nano())
	return cpu, self.Nvcsw + self.Nivcsw + kids.Nvcsw + kids.Nivcsw
}

// cpuTimeAll is usageAll's CPU time.
func cpuTimeAll() time.Duration {
	cpu, _ := usageAll()
	return cpu
}
