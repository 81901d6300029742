package results

import (
	"encoding/json"
	"fmt"
	"io"
)

// Cell is one cell of a run directory across its trials: one strategy ×
// scenario × fault × fencing × variant at one set of parameters (a sweep's
// points are cells of their own), as aggregate.json records it. The JSON
// field names are a contract, like summary.json's. See the statistics
// notes in stats.go for the methods.
type Cell struct {
	Strategy string `json:"strategy"`
	Scenario string `json:"scenario"`
	Fault    string `json:"fault"`
	Variant  string `json:"variant"`
	Fencing  bool   `json:"fencing"`
	// Params are the first trial's (its seed is the first of the cell's).
	Params Params `json:"params"`

	// Trials is how many trials ran; UnsafeTrials how many of them lost
	// safety (Summary.Unsafe), UnknownTrials how many could not be judged
	// (Summary.Verdict unknown); UnsafeRate is the unsafe share of the
	// judged trials (the others) and UnsafeRateCI95 its Wilson interval
	// ([0, 1] when none was judged).
	Trials         int        `json:"trials"`
	UnsafeTrials   int        `json:"unsafe_trials"`
	UnknownTrials  int        `json:"unknown_trials"`
	UnsafeRate     float64    `json:"unsafe_rate"`
	UnsafeRateCI95 [2]float64 `json:"unsafe_rate_ci95"`
	// Strikes, UnsafeStrikes and StrikesMissed are summed over the trials; where strikes
	// were counted, UnsafeStrikeRate is the share of strikes whose window
	// saw an unsafe outcome, with its Wilson interval (strikes taken as
	// independent trials of their own).
	Strikes              int64       `json:"strikes"`
	UnsafeStrikes        int64       `json:"unsafe_strikes"`
	StrikesMissed        int64       `json:"strikes_missed"`
	UnsafeStrikeRate     *float64    `json:"unsafe_strike_rate,omitempty"`
	UnsafeStrikeRateCI95 *[2]float64 `json:"unsafe_strike_rate_ci95,omitempty"`

	PaymentsPerSec Estimate `json:"payments_per_sec"`
	Availability   Estimate `json:"availability"`
	// Latency holds, per phase, the Estimate of each trial's p50, p99 and
	// p99.9 (nanoseconds) over the trials that report it (Latency.Has).
	Latency map[string]map[string]Estimate `json:"latency"`
	// LatencyByOutcome is the same for the acquire outcomes, when the
	// trials recorded them.
	LatencyByOutcome map[string]map[string]Estimate `json:"latency_by_outcome,omitempty"`
	// OverlapNs and OverlapMaxNs are the window of exposure per trial.
	OverlapNs    Estimate `json:"overlap_ns"`
	OverlapMaxNs Estimate `json:"overlap_max_ns"`
	// Interrupted is set when any trial was cut short.
	Interrupted bool `json:"interrupted,omitempty"`
}

// Judged is how many of the cell's trials were judged: safe or unsafe.
func (c *Cell) Judged() int { return c.Trials - c.UnknownTrials }

// TrialsText is the cell's verdict over its trials for people: "unsafe in
// 3 of 4", "safe in 4 of 4", with ", unknown in 1" when some trial could
// not be judged, and "unknown in 4 of 4" when none was.
func (c *Cell) TrialsText() string {
	var s string
	switch {
	case c.UnsafeTrials > 0:
		s = fmt.Sprintf("unsafe in %d of %d", c.UnsafeTrials, c.Trials)
	case c.Judged() == 0:
		return fmt.Sprintf("unknown in %d of %d", c.UnknownTrials, c.Trials)
	default:
		s = fmt.Sprintf("safe in %d of %d", c.Judged(), c.Trials)
	}
	if c.UnknownTrials > 0 {
		s += fmt.Sprintf(", unknown in %d", c.UnknownTrials)
	}
	return s
}

// AggregateFile holds one Cell per cell of a run directory, written when
// some cell ran more than one trial.
const AggregateFile = "aggregate.json"

// aggregateStats are the percentiles a Cell estimates per phase.
var aggregateStats = []string{StatP50, StatP99, StatP999}

// CellKey tells cells apart: everything about a run but its trial and its
// seed.
type CellKey struct {
	strategy, scenario, fault, variant string
	fencing                            bool
	params                             Params
}

func CellKeyOf(s *Summary) CellKey {
	p := s.Params
	p.Seed = 0
	fault := s.Fault
	if fault == "" {
		fault = FaultNone
	}
	return CellKey{s.Strategy, s.Scenario, fault, s.Variant, s.Fencing, p}
}

// TrialGroup is one cell's trials, in the order they ran.
type TrialGroup struct {
	Key  CellKey
	Runs []Summary
}

// GroupTrials splits ss into cells, in the order of each cell's first run.
func GroupTrials(ss []Summary) []TrialGroup {
	var out []TrialGroup
	at := map[CellKey]int{}
	for _, s := range ss {
		k := CellKeyOf(&s)
		i, ok := at[k]
		if !ok {
			i = len(out)
			at[k] = i
			out = append(out, TrialGroup{Key: k})
		}
		out[i].Runs = append(out[i].Runs, s)
	}
	return out
}

// MaxTrials is the most trials any cell of ss has: 1 for a directory of
// single runs (or one written before trials), 0 for none.
func MaxTrials(ss []Summary) int {
	n := 0
	for _, g := range GroupTrials(ss) {
		n = max(n, len(g.Runs))
	}
	return n
}

// Aggregate returns the cells of ss with their statistics over trials, in
// the order of each cell's first run.
func Aggregate(ss []Summary) []Cell {
	groups := GroupTrials(ss)
	out := make([]Cell, len(groups))
	for i, g := range groups {
		out[i] = CellOf(g.Runs)
	}
	return out
}

// CellOf aggregates one cell's trials (at least one).
func CellOf(runs []Summary) Cell {
	first := &runs[0]
	c := Cell{
		Strategy: first.Strategy, Scenario: first.Scenario, Fault: CellKeyOf(first).fault,
		Variant: first.Variant, Fencing: first.Fencing, Params: first.Params,
		Trials: len(runs),
	}
	var pps, avail, overlap, overlapMax []float64
	for i := range runs {
		s := &runs[i]
		switch {
		case IsUnsafe(s):
			c.UnsafeTrials++
		case s.Unknown():
			c.UnknownTrials++
		}
		c.Strikes += s.Strikes
		c.UnsafeStrikes += s.UnsafeStrikes
		c.StrikesMissed += s.StrikesMissed
		c.Interrupted = c.Interrupted || s.Interrupted
		pps = append(pps, s.PaymentsPerSec)
		avail = append(avail, s.Availability)
		overlap = append(overlap, float64(s.OverlapNs))
		overlapMax = append(overlapMax, float64(s.OverlapMaxNs))
	}
	if judged := c.Judged(); judged > 0 {
		c.UnsafeRate = float64(c.UnsafeTrials) / float64(judged)
	}
	c.UnsafeRateCI95 = Wilson(c.UnsafeTrials, c.Judged())
	if c.Strikes > 0 {
		r := float64(c.UnsafeStrikes) / float64(c.Strikes)
		ci := Wilson(int(c.UnsafeStrikes), int(c.Strikes))
		c.UnsafeStrikeRate, c.UnsafeStrikeRateCI95 = &r, &ci
	}
	c.PaymentsPerSec = EstimateOf(pps)
	c.Availability = EstimateOf(avail)
	c.OverlapNs = EstimateOf(overlap)
	c.OverlapMaxNs = EstimateOf(overlapMax)
	c.Latency = latencyEstimates(runs, func(s *Summary) map[string]Latency { return s.Latency }, PhaseNames[:])
	var outcomes []string
	for _, o := range OutcomeNames {
		for i := range runs {
			if _, ok := runs[i].LatencyByOutcome[o]; ok {
				outcomes = append(outcomes, o)
				break
			}
		}
	}
	if len(outcomes) > 0 {
		c.LatencyByOutcome = latencyEstimates(runs, func(s *Summary) map[string]Latency { return s.LatencyByOutcome }, outcomes)
	}
	return c
}

// latencyEstimates estimates aggregateStats of each named distribution
// over the trials that report it.
func latencyEstimates(runs []Summary, of func(s *Summary) map[string]Latency, names []string) map[string]map[string]Estimate {
	out := make(map[string]map[string]Estimate, len(names))
	for _, name := range names {
		m := make(map[string]Estimate, len(aggregateStats))
		for _, stat := range aggregateStats {
			var vs []float64
			for i := range runs {
				if v, ok := of(&runs[i])[name].Value(stat); ok {
					vs = append(vs, float64(v))
				}
			}
			m[stat] = EstimateOf(vs)
		}
		out[name] = m
	}
	return out
}

// WriteAggregate writes cells as aggregate.json: an indented JSON array.
func WriteAggregate(w io.Writer, cells []Cell) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(cells); err != nil {
		return fmt.Errorf("results: encoding aggregate: %w", err)
	}
	return nil
}

// ReadAggregate reads an aggregate.json written by WriteAggregate.
func ReadAggregate(r io.Reader) ([]Cell, error) {
	var cells []Cell
	if err := json.NewDecoder(r).Decode(&cells); err != nil {
		return nil, fmt.Errorf("results: decoding aggregate: %w", err)
	}
	return cells, nil
}
