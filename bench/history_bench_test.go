package bench

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/lockbench/lockbench/loadgen"
	"github.com/lockbench/lockbench/loadgen/store"
	"github.com/lockbench/lockbench/servers"
	"github.com/lockbench/lockbench/strategies"
)

// BenchmarkHistory measures what --history costs: the base scenario
// (loadgen.DefaultScenario: 2 instances, 2 deliveries a payment, the
// memory store) in a closed loop, the harshest case for a recorder, with
// setnx on a real Redis, without and with the run's history. The two sub-
// benchmarks alternate with -count; compare their payments/s and
// payments/cpu-s (this process's CPU during the load, which the history's
// encoding is part of) within one run. It reports the history's size per
// 1,000 payments too.
func BenchmarkHistory(b *testing.B) {
	lock, ok := transportLock(b, "setnx")
	if !ok {
		b.Skip("no Redis")
	}
	for _, history := range []bool{false, true} {
		name := "history=off"
		if history {
			name = "history=on"
		}
		b.Run(name, func(b *testing.B) { runHistory(b, lock, history) })
	}
}

func runHistory(b *testing.B, lock strategies.Config, history bool) {
	sc := loadgen.DefaultScenario()
	sc.Name = "history"
	sc.Payments = max(b.N, 1000)
	sc.Rate = 0
	st := store.NewMemory()
	defer st.Close()
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	var cpu time.Duration
	o := loadgen.Options{Strategy: strategies.MustLookup("setnx"), Scenario: sc, Lock: lock, Store: st,
		Reporter: loadgen.LoadSpan(loadSpan(b, cpuTimeAll, &cpu))}
	var hf *loadgen.HistoryFile
	path := filepath.Join(b.TempDir(), "history.jsonl.zst")
	if history {
		var err error
		if hf, err = loadgen.NewHistoryFile(path); err != nil {
			b.Fatal(err)
		}
		o.History, o.Reporter = true, loadgen.Tee(o.Reporter, hf)
	}
	r, err := loadgen.Run(ctx, o)
	if hf != nil {
		err = errors.Join(err, hf.Close())
	}
	if err != nil {
		b.Fatal(servers.Redact(err.Error()))
	}
	s := r.Summary
	b.ReportMetric(float64(s.DurationNs)/float64(max(s.Payments, 1)), "ns/op")
	b.ReportMetric(s.PaymentsPerSec, "payments/s")
	if cpu > 0 {
		b.ReportMetric(float64(s.Payments)/cpu.Seconds(), "payments/cpu-s")
	}
	if history {
		fi, err := os.Stat(path)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(fi.Size())/float64(max(s.Payments, 1))*1000, "history-B/1000payments")
	}
}
