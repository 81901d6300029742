package adapter_test

import (
	"context"
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

// BenchmarkJavaProtocol is BenchmarkAdapterProtocol (package bench) for the
// Java adapters' protocol loop, which that benchmark cannot start (its
// adapters are scripts; the Java one is compiled classes in the unpacked
// folder): the no-op adapter adapters/java/Noop.java, run as java-curator
// is (adapter.JavaFlags), shared by 4 goroutines, 500 untimed warm-up
// cycles, then per timed cycle ns/op (wall), this process's CPU and the
// adapter's (its process CPU clock, every thread).
//
//	go test -run '^$' -bench JavaProtocol -benchtime 5000x -count 5 ./strategies/adapter/
func BenchmarkJavaProtocol(b *testing.B) {
	if err := adapters.CheckJava(adapters.JavaPath); err != nil {
		b.Skip(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	dir, err := adapters.Dir(ctx, adapters.Java)
	if err != nil {
		b.Fatal(err)
	}
	s, err := adapter.New(ctx, adapter.JavaCommand(dir, "Noop"),
		strategies.Config{Owner: "instance-0", Workers: benchWorkers})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	pid := s.Pid()
	benchCycles(b, s, benchWarmup)
	runtime.GC()
	b.ResetTimer()
	self0, child0 := selfCPU(), processCPU(b, pid)
	benchCycles(b, s, b.N)
	child, self := processCPU(b, pid)-child0, selfCPU()-self0
	b.StopTimer()
	n := float64(b.N)
	b.ReportMetric(float64(self.Nanoseconds())/1e3/n, "cpu-us/cycle-lockbench")
	b.ReportMetric(float64(child.Nanoseconds())/1e3/n, "cpu-us/cycle-adapter")
}

// As in package bench's BenchmarkAdapterProtocol.
const (
	benchWorkers = 4
	benchWarmup  = 500
)

// benchCycles runs n acquire-release cycles on s from benchWorkers
// goroutines, each on a key of its own.
func benchCycles(b *testing.B, s strategies.Strategy, n int) {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, benchWorkers)
	for w := range benchWorkers {
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

// selfCPU is this process's CPU time so far, user and system.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// processCPU is process pid's CPU time so far, all its threads, exited
// ones too: its process CPU clock, in nanoseconds.
func processCPU(b *testing.B, pid int) time.Duration {
	const cpuclockSched = 2
	clock := ^int32(pid)<<3 | cpuclockSched
	var ts syscall.Timespec
	if _, _, errno := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, uintptr(clock), uintptr(unsafe.Pointer(&ts)), 0); errno != 0 {
		b.Fatalf("CPU clock of adapter process %d: %v", pid, errno)
	}
	return time.Duration(ts.Nano())
}
