package bench

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/lockbench/lockbench/adapters"
	"github.com/lockbench/lockbench/strategies"
	"github.com/lockbench/lockbench/strategies/adapter"
)

const (
	// adapterWorkers are the goroutines that share one strategy in
	// BenchmarkAdapterProtocol, as an instance's workers do: 4, so that
	// requests overlap on the adapter's pipe as they do in a run.
	adapterWorkers = 4
	// adapterWarmup is the untimed cycles run before the timer starts: 500,
	// enough for V8 to compile the Node adapter's hot path, so that the
	// figures are a long run's, not its first second's.
	adapterWarmup = 500
)

// noopAdapter is one of the no-op adapters: a runtime, and its script,
// relative to this package's folder; or, for Java, its class in the
// compiled adapter folder.
type noopAdapter struct {
	runtime, path, script, class string
}

// noopAdapters are the no-op adapters BenchmarkAdapterProtocol runs, which
// grant every acquire at once without a library or a server.
var noopAdapters = []noopAdapter{
	{runtime: "node", path: "node", script: "../adapters/node/noop.js"},
	{runtime: "python", path: adapter.Python, script: "../adapters/python/noop.py"},
	// Started as java-curator is (adapter.JavaCommand: its JVM flags).
	{runtime: "java", path: adapters.JavaPath, class: "Noop"},
}

// installed says why a's runtime cannot run here, nil when it can.
func (a noopAdapter) installed() error {
	if a.class != "" {
		return adapters.CheckJava(adapters.JavaPath)
	}
	_, err := exec.LookPath(a.path)
	return err
}

// command is how a's adapter starts, and the argument that tells its
// process from this one's other children.
func (a noopAdapter) command(ctx context.Context) (adapter.Command, string, error) {
	if a.class != "" {
		dir, err := adapters.Dir(ctx, adapters.Java)
		return adapter.JavaCommand(dir, a.class), a.class, err
	}
	script, err := filepath.Abs(a.script)
	return adapter.Command{Path: a.path, Args: []string{script}}, script, err
}

// adapterSkipOnce prints each runtime's skip reason once, not per -count.
var adapterSkipOnce sync.Map

// BenchmarkAdapterProtocol measures what the adapter protocol itself costs
// per lock cycle (acquire, then release): the no-op adapters in Node and
// Python (adapters/*/noop.*) and Java (adapters/java/Noop.java), against
// in-process nolock as the baseline.
// adapterWorkers goroutines share one strategy, as an instance's workers
// do; each b.N is one cycle. It reports, over the same timed cycles:
//
//   - ns/op: wall time per cycle;
//   - cpu-us/cycle-lockbench: this process's CPU (getrusage RUSAGE_SELF,
//     user + system) per cycle;
//   - cpu-us/cycle-adapter: the adapter process's CPU per cycle, all its
//     threads, live or exited (its process CPU clock, in nanoseconds:
//     /proc/PID/stat counts in 10 ms ticks, too coarse for a few thousand
//     cycles).
//
// The adapter is started, and warmed up by adapterWarmup cycles, before
// the timer starts; its start-up and exit are not counted. The figures
// are the protocol's overhead (JSON lines, pipes, the runtime's event loop
// or threads), not any lock library's speed: docs/adapters.md.
func BenchmarkAdapterProtocol(b *testing.B) {
	b.Run("runtime=nolock", func(b *testing.B) {
		s, err := strategies.MustLookup("nolock").New(context.Background(), strategies.Config{})
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		runCycles(b, s, 0)
	})
	for _, a := range noopAdapters {
		b.Run("runtime="+a.runtime, func(b *testing.B) {
			if err := a.installed(); err != nil {
				msg := fmt.Sprintf("BenchmarkAdapterProtocol/runtime=%s skipped: %s is not installed (%v)", a.runtime, a.path, err)
				// go test shows a benchmark's skip message only with -v.
				if _, done := adapterSkipOnce.LoadOrStore(a.runtime, true); !done {
					fmt.Fprintln(os.Stderr, msg)
				}
				b.Skip(msg)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute) // room for Java's first compile
			defer cancel()
			cmd, script, err := a.command(ctx)
			if err != nil {
				b.Fatal(err)
			}
			before := adapterChildren(script)
			s, err := adapter.New(ctx, cmd, strategies.Config{Owner: "instance-0", Workers: adapterWorkers})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			pid := 0
			for p := range adapterChildren(script) {
				if !before[p] {
					if pid != 0 {
						b.Fatalf("two new children run %s: %d and %d", script, pid, p)
					}
					pid = p
				}
			}
			if pid == 0 {
				b.Fatalf("no child of this process runs %s", script)
			}
			runCycles(b, s, pid)
		})
	}
}

// runCycles runs adapterWarmup cycles untimed, then b.N timed ones, on s
// from adapterWorkers goroutines, and reports the CPU per cycle of this
// process and, when pid is not 0, of process pid (the adapter).
func runCycles(b *testing.B, s strategies.Strategy, pid int) {
	cycles(b, s, adapterWarmup)
	runtime.GC()
	b.ResetTimer()
	self0 := cpuTime()
	child0 := processCPU(b, pid)
	cycles(b, s, b.N)
	child := processCPU(b, pid) - child0
	self := cpuTime() - self0
	b.StopTimer()
	n := float64(b.N)
	b.ReportMetric(float64(self.Nanoseconds())/1e3/n, "cpu-us/cycle-lockbench")
	if pid != 0 {
		b.ReportMetric(float64(child.Nanoseconds())/1e3/n, "cpu-us/cycle-adapter")
	}
}

// cycles runs n lock cycles (acquire, release) on s, shared by
// adapterWorkers goroutines, each on a key of its own: the no-op adapters
// and nolock grant every acquire, so keys only matter to a real lock.
func cycles(b *testing.B, s strategies.Strategy, n int) {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, adapterWorkers)
	for w := range adapterWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := context.Background()
			key := "lockbench:bench:account:" + strconv.Itoa(w)
			for next.Add(1) <= int64(n) {
				l, err := s.Acquire(ctx, key)
				if err == nil {
					err = l.Release(ctx)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		b.Fatal(err)
	}
}

// processCPU is the CPU time (user and system) of process pid so far, all
// its threads, including those that have exited: its process CPU clock
// (clock_gettime of MAKE_PROCESS_CPUCLOCK(pid, CPUCLOCK_SCHED)), which
// Linux reads for any process the caller may see, in nanoseconds. 0 when
// pid is 0.
func processCPU(b *testing.B, pid int) time.Duration {
	if pid == 0 {
		return 0
	}
	const cpuclockSched = 2
	clock := ^int32(pid)<<3 | cpuclockSched
	var ts syscall.Timespec
	if _, _, errno := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, uintptr(clock), uintptr(unsafe.Pointer(&ts)), 0); errno != 0 {
		b.Fatalf("CPU clock of adapter process %d: %v", pid, errno)
	}
	return time.Duration(ts.Nano())
}

// adapterChildren are the pids of this process's children whose command
// line has the argument script (from /proc: a child's stat gives its parent, its
// cmdline its arguments).
func adapterChildren(script string) map[int]bool {
	self := strconv.Itoa(os.Getpid())
	kids := map[int]bool{}
	dirs, _ := os.ReadDir("/proc")
	for _, e := range dirs {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// "pid (comm) state ppid …"; comm may hold spaces and parentheses.
		j := bytes.LastIndexByte(stat, ')')
		if j < 0 {
			continue
		}
		f := bytes.Fields(stat[j+1:])
		if len(f) < 2 || string(f[1]) != self {
			continue
		}
		cmdline, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil {
			continue
		}
		for _, arg := range bytes.Split(cmdline, []byte{0}) {
			if string(arg) == script {
				kids[pid] = true
			}
		}
	}
	return kids
}
