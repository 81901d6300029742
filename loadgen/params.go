package loadgen

import (
	"fmt"
	"time"

	"github.com/lockbench/lockbench/results"
)

// Params is the whole scenario as summary.json records it (results.Params),
// without the run's fault and store transport, which the run sets.
// ScenarioOf is its inverse.
func (s *Scenario) Params() results.Params {
	return results.Params{
		Instances: s.Instances, Workers: s.Workers, DeliveriesEach: s.Deliveries,
		Accounts: s.Accounts, AccountDist: s.AccountDist.String(), LockKey: s.LockKey,
		Rate: s.Rate, Hold: s.Hold.String(), TTLNs: int64(s.TTL), Store: string(s.Store),
		InstanceMode: string(s.InstanceMode), Seed: s.Seed,
		Payments: s.Payments, DurationNs: int64(s.Duration), WarmupNs: int64(s.Warmup),
		Funding: s.Funding, AcquireTimeoutNs: int64(s.AcquireTimeout), Retry: s.Retry.String(),
		Fencing: s.Fencing, FencingStrict: s.Fencing && s.FencingStrict, IntervalNs: int64(s.LatencyInterval()),
	}
}

// ScenarioOf rebuilds the scenario named name (and variant) from p, the
// inverse of Scenario.Params: what p leaves out (funding, acquire timeout
// and retry, in files that did not record them) keeps its default. It
// fails when p's hold, account distribution or retry do not parse.
func ScenarioOf(p results.Params, name, variant string) (Scenario, error) {
	sc := DefaultScenario()
	sc.Name, sc.Variant = name, variant
	sc.Instances, sc.Workers, sc.Deliveries = p.Instances, p.Workers, p.DeliveriesEach
	sc.Accounts, sc.LockKey, sc.Rate = p.Accounts, p.LockKey, p.Rate
	sc.TTL, sc.Store, sc.InstanceMode, sc.Seed = time.Duration(p.TTLNs), StoreKind(p.Store), InstanceMode(p.InstanceMode), p.Seed
	sc.Payments, sc.Duration, sc.Warmup = p.Payments, time.Duration(p.DurationNs), time.Duration(p.WarmupNs)
	sc.Fencing, sc.FencingStrict, sc.Interval = p.Fencing, p.FencingStrict, time.Duration(p.IntervalNs)
	if p.Funding > 0 {
		sc.Funding = p.Funding
	}
	if p.AcquireTimeoutNs > 0 {
		sc.AcquireTimeout = time.Duration(p.AcquireTimeoutNs)
	}
	var err error
	if sc.Hold, err = ParseHold(p.Hold); err != nil {
		return sc, fmt.Errorf("hold: %w", err)
	}
	if sc.AccountDist, err = ParseAccountDist(p.AccountDist); err != nil {
		return sc, fmt.Errorf("account dist: %w", err)
	}
	if p.Retry != "" {
		if sc.Retry, err = ParseRetry(p.Retry); err != nil {
			return sc, fmt.Errorf("retry: %w", err)
		}
	}
	return sc, nil
}
