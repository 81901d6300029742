package loadgen

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/lockbench/lockbench/loadgen/store"
)

func cpuAll() time.Duration {
	var self, kids syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	syscall.Getrusage(syscall.RUSAGE_CHILDREN, &kids)
	return time.Duration(self.Utime.Nano() + self.Stime.Nano() + kids.Utime.Nano() + kids.Stime.Nano())
}

func BenchmarkTmpTransport(b *testing.B) {
	for _, mode := range []string{"goroutine", "process"} {
		b.Run(mode, func(b *testing.B) {
			sc := DefaultScenario()
			sc.Instances, sc.Deliveries, sc.InstanceMode = 2, 1, mode
			sc.Payments = max(b.N, 1000)
			sc.Hold, _ = ParseHold("0s")
			st := store.NewMemory()
			var cpu time.Duration
			span := func() func() {
				b.ResetTimer()
				c0 := cpuAll()
				return func() { cpu = cpuAll() - c0; b.StopTimer() }
			}
			r, err := Run(context.Background(), Options{Strategy: "nolock", Scenario: sc, Store: st, LoadSpan: span})
			if err != nil {
				b.Fatal(err)
			}
			s := r.Summary
			if s.Processed != s.Payments {
				b.Fatalf("processed %d of %d %v", s.Processed, s.Payments, s.Errors)
			}
			b.ReportMetric(s.PaymentsPerSec, "payments/s")
			b.ReportMetric(float64(s.Payments)/cpu.Seconds(), "payments/cpu-s")
		})
	}
}
