package loadgen

import (
	"context"
	"time"

	"github.com/lockbench/lockbench/loadgen/store"
	"github.com/lockbench/lockbench/results"
	"github.com/lockbench/lockbench/strategies"
)

func progress(o Options, env *FaultEnv, insts []instance, col *collector, start time.Time) Progress {
	var snap Snapshot
	for _, in := range insts {
		snap.Add(in.Counts())
	}
	p := Progress{Strategy: o.Strategy.Name, Elapsed: time.Since(start), Offered: env.offerCounts().offered.Load(), Total: env.total, Done: snap.Deliveries, Cycles: snap}
	if s := p.Elapsed.Seconds(); s > 0 {
		p.RatePerS = float64(p.Offered) / s
	}
	p.P99 = col.p99()
	if c, err := o.Store.Counts(context.Background()); err == nil {
		p.Store = c
		p.UnsafeNow = c.Duplicates + c.Lost + c.Overdrafts + c.LostUpdates + c.StaleAccepted
	}
	return p
}

// brokeAtStart is the run of a strategy whose adapter was lost before
// the first payment: nothing offered, its one lost call (the probe) in
// errors, unknown, and why.
func brokeAtStart(o Options, sc Scenario, err error) results.Run {
	s := results.Summary{
		Strategy: o.Strategy.Name,
		Scenario: sc.Name,
		Variant:  sc.Variant,
		Fault:    results.FaultNone,
		Fencing:  sc.Fencing && o.Strategy.Fencing,
		Errors:   map[string]int64{ErrClassAdapterLost: 1},
		Params:   sc.Params(),
	}
	if o.Fault != nil {
		s.Fault = o.Fault.Name()
	}
	s.Unjudged = results.BrokeAtStart + ": " + err.Error()
	s.Finish()
	return results.Run{Summary: s}
}

func summarize(o Options, info strategies.Info, sc Scenario, env *FaultEnv, c store.Counts, snap Snapshot, total results.PhaseSet, measured, behind time.Duration) results.Summary {
	faultName := "none"
	if o.Fault != nil {
		faultName = o.Fault.Name()
	}
	payments := env.offerCounts().offered.Load()
	s := results.Summary{
		Strategy:       o.Strategy.Name,
		Scenario:       sc.Name,
		Variant:        sc.Variant,
		Fault:          faultName,
		Fencing:        sc.Fencing && info.Fencing,
		Payments:       payments,
		Deliveries:     payments * int64(sc.Deliveries),
		Processed:      c.Processed,
		Duplicates:     c.Duplicates,
		Lost:           c.Lost,
		Unprocessed:    max(0, payments-c.Processed),
		Overdrafts:     c.Overdrafts,
		LostUpdates:    c.LostUpdates,
		Overlaps:       c.Overlaps,
		OverlapNs:      c.OverlapNs,
		OverlapMaxNs:   c.OverlapMaxNs,
		StaleRejected:  c.StaleRejected,
		StaleAccepted:  c.StaleAccepted,
		TokenReused:    c.TokenReused,
		TokenRegressed: c.TokenRegressed,
		NotAcquired:    snap.NotAcquired,
		Redeliveries:   snap.Redeliveries,
		Conflicts:      snap.Conflicts,
		Errors:         snap.ErrorMap(),
		Latency:        total.Latencies(),
		DurationNs:     int64(measured),
		StartUnixNs:    env.start.UnixNano(),
		BehindNs:       int64(behind),
		Params:         sc.Params(),
	}
	if secs := measured.Seconds(); secs > 0 {
		s.OpsPerSec = float64(snap.Measured) / secs
		// Payments processed: those offered in the measured span, at
		// the share of the run's payments processed.
		if payments > 0 {
			processed := min(1, float64(c.Processed)/float64(payments))
			s.PaymentsPerSec = float64(env.offerCounts().measured.Load()) * processed / secs
		}
	}
	env.mu.Lock()
	s.FaultWindow = env.window
	if s.FaultWindow != nil && s.FaultWindow.EndNs == 0 {
		s.FaultWindow.EndNs = int64(measured)
	}
	s.FaultEvents = env.events
	env.mu.Unlock()
	var landed func(*strikeAim) bool
	if env.asks != nil {
		landed = env.asks.judgeDeferred
	}
	s.Strikes, s.UnsafeStrikes, s.StrikesMissed = env.strikes.finish(c, landed)
	s.Finish()
	return s
}
