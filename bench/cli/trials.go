package cli

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/lockbench/lockbench/faults"
	"github.com/lockbench/lockbench/loadgen"
	"github.com/lockbench/lockbench/results"
	"github.com/lockbench/lockbench/strategies"
)

// Trials: a command with --trials N runs each of its cells N times, trial
// k with seed seed+k−1 and fresh state (the store is reset and every
// instance builds its strategy anew; loadgen.Run does both), and records
// the trial and the whole scenario in each run's summary, so that the
// row can be run again (`lockbench run --from DIR --row N`).

// trialSeed is the seed of trial (1-based) of a cell whose first seed is
// base.
func trialSeed(base int64, trial int) int64 { return base + int64(trial) - 1 }

// runTrial runs one trial of one cell: the scenario sc (whose Seed is the
// first trial's) with the trial's seed, and returns the run with its trial
// and its whole scenario in the summary.
func runTrial(ctx context.Context, sess *session, info strategies.Info, sc loadgen.Scenario, spec faults.Spec, trial int) (results.Run, error) {
	sc = trialScenario(sess, sc, trial)
	r, err := sess.run(ctx, info, sc, spec, trial)
	r.Summary.Trial = trial
	used := r.Summary.Params.StoreTransport // the run's, not the scenario's
	r.Summary.Params = paramsOf(sc, spec)
	r.Summary.Params.StoreTransport = used
	return r, err
}

// trialScenario is sc as trial trial of a cell runs it on sess: its seed
// is the trial's, and on agents every instance is a process (recorded so).
func trialScenario(sess *session, sc loadgen.Scenario, trial int) loadgen.Scenario {
	sc.Seed = trialSeed(sc.Seed, trial)
	if sess.agents != nil {
		sc.InstanceMode = loadgen.InstanceProcess
	}
	return sc
}

// paramsOf is the whole scenario of a run and its fault, as summary.json
// records it.
func paramsOf(sc loadgen.Scenario, spec faults.Spec) results.Params {
	p := sc.Params()
	p.Fault = specString(spec)
	return p
}

// specString is spec as a --fault value, its parameters sorted: "none"
// for the zero Spec.
func specString(spec faults.Spec) string {
	if spec.Name == "" {
		return results.FaultNone
	}
	keys := make([]string, 0, len(spec.Params))
	for k := range spec.Params {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	kv := make([]string, len(keys))
	for i, k := range keys {
		kv[i] = k + "=" + spec.Params[k]
	}
	if len(kv) == 0 {
		return spec.Name
	}
	return spec.Name + ":" + strings.Join(kv, ",")
}

// scenarioOfRow rebuilds the scenario and the --fault value of a
// summary.json row from its params. Rows written before lockbench
// recorded whole scenarios lack the payment count and duration, and are
// refused.
func scenarioOfRow(s results.Summary) (loadgen.Scenario, string, error) {
	p := s.Params
	if p.Payments == 0 && p.DurationNs == 0 {
		return loadgen.Scenario{}, "", usageErr("--from: the row (%s) was written before lockbench recorded whole scenarios; run it again with flags", s.String())
	}
	sc, err := loadgen.ScenarioOf(p, s.Scenario, s.Variant)
	if err != nil {
		return sc, "", usageErr("--from: %v", err)
	}
	fault := p.Fault
	if fault == "" {
		fault = s.Fault
	}
	return sc, fault, nil
}

// Time estimates for --dry-run: a cell's load lasts its payments at its
// rate (or its duration) after its warmup; around it, starting instances
// and judging the store take about this long, instance processes longer.
const (
	estimateOverhead        = 400 * time.Millisecond
	estimateProcessOverhead = 700 * time.Millisecond
	// estimateClosedRate is the payments/s a closed-loop run is assumed
	// to reach, for its estimate.
	estimateClosedRate = 1500.0
	// estimateServers is the time to start the local servers.
	estimateServers = 8 * time.Second
)

// estimate is how long one run of sc is expected to take.
func estimate(sc loadgen.Scenario) time.Duration {
	d := sc.Warmup + estimateOverhead
	if sc.InstanceMode == loadgen.InstanceProcess {
		d += estimateProcessOverhead - estimateOverhead
	}
	switch {
	case sc.Duration > 0:
		d += sc.Duration
	case sc.Rate > 0:
		d += time.Duration(float64(sc.Payments) / sc.Rate * float64(time.Second))
	default:
		d += time.Duration(float64(sc.Payments) / estimateClosedRate * float64(time.Second))
	}
	return d
}

// fmtEstimate is an estimated duration, rounded for people.
func fmtEstimate(d time.Duration) string {
	switch {
	case d >= time.Minute:
		return "~" + d.Round(10*time.Second).String()
	case d >= 10*time.Second:
		return "~" + d.Round(time.Second).String()
	}
	return fmt.Sprintf("~%.1fs", d.Seconds())
}
