package plan

import (
	"bytes"
	"testing"
	"time"

	"github.com/lockbench/lockbench/results"
	"github.com/lockbench/lockbench/results/resultstest"
)

// printFixture is a plan with one line of each kind the table shows.
func printFixture() (Report, Config) {
	ms := int64(time.Millisecond)
	cfg := Config{Start: 250, Factor: 2, Refine: 2, SLO: DefaultSLOP99, Confirm: true}
	rep := Report{
		TargetRate: 1000, SLOP99Ns: int64(cfg.SLO), MaxBehind: MaxBehind,
		StepDurationNs: int64(2 * time.Second), StepWarmupNs: int64(500 * time.Millisecond),
		RisksFrom: "expected (from the registry)",
		Params: results.Params{Instances: 3, Workers: 8, DeliveriesEach: 2, Accounts: 100, AccountDist: "uniform",
			LockKey: "account", Hold: "5ms", Store: "memory"},
		Strategies: []Line{
			// Fits the target with headroom.
			{Strategy: "setnx", Exclusion: true, MaxRate: 2828, MaxAchieved: 2800, LimitedBy: "p99 31.4ms > 20.0ms",
				Fits: true, Headroom: 2.828, Cost: Cost{AtRate: 1000, AcquireP50Ns: 850_000, AcquireP99Ns: 4 * ms, TotalP99Ns: 9 * ms},
				Risks: "pause past TTL: double-processing", Steps: []Step{{Rate: 250, OK: true}, {Rate: 4000}}},
			// Does not fit.
			{Strategy: "etcd", Exclusion: true, Fencing: true, MaxRate: 500, LimitedBy: "achieved 700/s < 95% of offered",
				Headroom: 0.5, Cost: Cost{AtRate: 500, AcquireP50Ns: 3 * ms, AcquireP99Ns: 12_500_000},
				Risks: "pause past TTL: stale writes rejected by the store (fenced)", Steps: []Step{{Rate: 250, OK: true}}},
			// No rate held, and the sweep stopped on an error.
			{Strategy: "pg-onconflict", Exclusion: true, LimitedBy: "3 errors", Error: "servers: postgres\ndown",
				Risks: "kill-node: unavailable (one node)", Steps: []Step{{Rate: 250}, {Rate: 125}, {Rate: 63}}},
			// No exclusion, unsafe in the sweep itself.
			{Strategy: "mutex", MaxRate: 8000, LimitedBy: "step limit", Headroom: 8,
				Cost: Cost{AtRate: 1000, AcquireP50Ns: 120, AcquireP99Ns: 2_000}, SweepUnsafe: 17,
				Risks: "no exclusion across instances", Steps: []Step{{Rate: 250, OK: true}}},
		},
	}
	return rep, cfg
}

func TestPrint(t *testing.T) {
	rep, cfg := printFixture()
	var b bytes.Buffer
	Print(&b, rep, cfg)
	resultstest.Golden(t, "print.golden.txt", b.Bytes())

	// Without a target there are no fit columns and no fit summary.
	rep.TargetRate = 0
	cfg.Confirm = false
	b.Reset()
	Print(&b, rep, cfg)
	resultstest.Golden(t, "print-no-target.golden.txt", b.Bytes())
}
