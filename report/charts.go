package report

import (
	"errors"
	"fmt"

	"github.com/lockbench/lockbench/results"
)

// ChartSet is every chart that could be drawn from a set of runs, in
// report order, and for every kind that could not, a line saying why.
type ChartSet struct {
	Charts  []*Chart
	Missing []string
}

// BuildCharts draws every chart lockbench knows from runs, choosing each
// one's input by scenario and fault (the package doc lists them). A chart
// without input is left out and noted in Missing. Errors drawing one chart
// do not stop the others; they are joined in the error.
func BuildCharts(runs []results.Run) (ChartSet, error) {
	var cs ChartSet
	var errs []error
	add := func(what string, ch *Chart, err error, missing string) {
		switch {
		case err != nil:
			errs = append(errs, err)
			cs.Missing = append(cs.Missing, fmt.Sprintf("%s: could not be drawn (%v).", what, err))
		case ch == nil:
			cs.Missing = append(cs.Missing, what+": not produced, "+missing+".")
		default:
			cs.Charts = append(cs.Charts, ch)
		}
	}
	ss := results.SummariesOf(runs)

	base := spectrumRuns(runs)
	for _, p := range []results.Phase{results.Acquire, results.Total} {
		ch, err := LatencySpectrum(base, p)
		add("Latency spectrum ("+p.String()+")", ch, err, "no fault-free run with "+p.String()+" latencies")
	}

	ch, err := ThroughputContention(sweepSummaries(ss, results.ScenarioContention))
	add("Throughput against contention", ch, err, `no contention sweep (scenario "contention") in these runs`)

	// Only the matrix runs the sweep on the Postgres store: a report
	// without it says nothing of it.
	if ch, err = ThroughputContention(sweepSummaries(ss, results.ScenarioPgContention)); ch != nil || err != nil {
		if ch != nil {
			ch.Name, ch.Title = "throughput-contention-postgres", "Throughput against contention, on the Postgres store"
			ch.Caption = "The same sweep with the bank in Postgres: the strategies that use the database as the lock " +
				"(a unique marker, the row lock, a version check) beside the locks, like for like."
		}
		add("Throughput against contention on the Postgres store", ch, err, "")
	}

	ch, err = LatencyThroughput(sweepSummaries(ss, results.ScenarioSweep))
	add("Latency against throughput", ch, err, `no rate sweep (scenario "sweep") in these runs`)

	verdicts := results.VerdictRuns(ss)
	ch, err = SafetyGrid(verdicts)
	add("Safety grid", ch, err, "no fault was injected")

	faults, byFault := faultRunsWithIntervals(runs)
	for _, f := range faults {
		ch, err := LatencyTimeline(byFault[f], f)
		add("Latency timeline ("+f+")", ch, err, "no interval was recorded")
	}
	if len(faults) == 0 {
		add("Latency timeline", nil, nil, "no faulted run with per-second intervals")
	}
	return cs, errors.Join(errs...)
}
