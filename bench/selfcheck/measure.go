package selfcheck

import (
	"context"
	"fmt"
	"os"
	"runtime/pprof"
	"syscall"
	"time"

	"github.com/lockbench/lockbench/loadgen"
	"github.com/lockbench/lockbench/strategies"
)

// lockbenchScenario is lockbench's side of a check named name: one
// instance of clients workers, one delivery a payment, payments payments,
// zero hold and no warm-up. One key per cycle (--lock-key payment), never
// contended, as the native tools' keys and the bare loops' are; a small
// bank (1000 accounts), so that the store's records stay in cache as any
// app's hot rows would (a million accounts made the store's Enter and
// Finish cache misses, a cost of that scenario, not of the harness).
func lockbenchScenario(name string, clients, payments int) loadgen.Scenario {
	sc := loadgen.DefaultScenario()
	sc.Name = name
	sc.Instances, sc.Workers, sc.Deliveries = 1, clients, 1
	sc.Payments = payments
	sc.LockKey = "payment"
	sc.Accounts = 1000
	sc.Hold, _ = loadgen.ParseHold("0s")
	sc.Warmup = 0
	return sc
}

// lockbenchCycles runs strategy name through sc on lockbench's side of
// the check (h) and returns its lock-cycle rate, and the process's CPU per
// cycle while the load ran (loadgen.LoadSpan: without the run's
// set-up, as the rate is).
func lockbenchCycles(ctx context.Context, h Harness, name string, sc loadgen.Scenario) (cycleRate, error) {
	info, ok := strategies.Lookup(name)
	if !ok {
		return cycleRate{}, fmt.Errorf("unknown strategy %q", name)
	}
	var cpu time.Duration
	o := loadgen.Options{Strategy: info, Scenario: sc,
		Reporter: loadgen.LoadSpan(func() func() {
			cpu0 := processCPU()
			return func() { cpu = processCPU() - cpu0 }
		})}
	run, err := h.Run(ctx, o)
	if err != nil {
		return cycleRate{}, err
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
