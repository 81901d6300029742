package report

import (
	"sort"

	"github.com/lockbench/lockbench/results"
)

// spectrumRuns picks the runs whose whole-run histograms the latency
// spectrum shows: the fault-free runs of scenario "base" or, when there are
// none, of the first fault-free scenario that is not a sweep. One cell per
// series (the first), with all its trials.
func spectrumRuns(runs []results.Run) []results.Run {
	in := spectrumFilter(results.SummariesOf(runs))
	var out []results.Run
	for _, r := range runs {
		if in(&r.Summary) {
			out = append(out, r)
		}
	}
	return out
}

// spectrumFilter says which runs of ss spectrumRuns picks, from their
// summaries alone: Render reads the whole-run histograms of those runs
// only.
func spectrumFilter(ss []results.Summary) func(s *results.Summary) bool {
	cand := func(s *results.Summary) bool { return !s.HasFault() && !results.IsSweep(s) }
	scenario, found := "", false
	for i := range ss {
		if !cand(&ss[i]) {
			continue
		}
		if !found {
			scenario, found = ss[i].Scenario, true
		}
		if ss[i].Scenario == results.ScenarioBase {
			scenario = results.ScenarioBase
			break
		}
	}
	first := map[seriesKey]results.CellKey{}
	for i := range ss {
		s := &ss[i]
		if !cand(s) || s.Scenario != scenario {
			continue
		}
		if _, ok := first[keyOf(s)]; !ok {
			first[keyOf(s)] = results.CellKeyOf(s)
		}
	}
	return func(s *results.Summary) bool {
		return found && cand(s) && s.Scenario == scenario && first[keyOf(s)] == results.CellKeyOf(s)
	}
}

// sweepSummaries returns the fault-free summaries of the named sweep.
func sweepSummaries(ss []results.Summary, sweep string) []results.Summary {
	var out []results.Summary
	for _, s := range ss {
		if !s.HasFault() && results.InSweep(&s, sweep) {
			out = append(out, s)
		}
	}
	return out
}

// faultRunsWithIntervals groups the faulted runs that have intervals by
// fault, faults in FaultOrder.
func faultRunsWithIntervals(runs []results.Run) (faults []string, byFault map[string][]results.Run) {
	byFault = map[string][]results.Run{}
	for _, r := range runs {
		if !r.Summary.HasFault() || len(r.Intervals) == 0 {
			continue
		}
		f := r.Summary.Fault
		if _, ok := byFault[f]; !ok {
			faults = append(faults, f)
		}
		byFault[f] = append(byFault[f], r)
	}
	sortFaults(faults)
	return faults, byFault
}

// resultRows are the runs of the short results table: the fault-free runs
// that are neither sweep points nor the baseline of a fault scenario (the
// verdict table and the charts show those), falling back to every
// fault-free run, then to every run.
func resultRows(ss []results.Summary) []results.Summary {
	faulted := map[string]bool{}
	for i := range ss {
		if ss[i].HasFault() {
			faulted[ss[i].Scenario] = true
		}
	}
	tiers := []func(s *results.Summary) bool{
		func(s *results.Summary) bool { return !s.HasFault() && !results.IsSweep(s) && !faulted[s.Scenario] },
		func(s *results.Summary) bool { return !s.HasFault() && !results.IsSweep(s) },
		func(s *results.Summary) bool { return !s.HasFault() },
	}
	for _, keep := range tiers {
		var out []results.Summary
		for i := range ss {
			if keep(&ss[i]) {
				out = append(out, ss[i])
			}
		}
		if len(out) > 0 {
			return out
		}
	}
	return ss
}

func sortFaults(faults []string) {
	sort.SliceStable(faults, func(i, j int) bool {
		ri, rj := faultRank(faults[i]), faultRank(faults[j])
		if ri != rj {
			return ri < rj
		}
		return faults[i] < faults[j]
	})
}

// seriesKey identifies one line of a chart: a strategy in one variant,
// with or without fencing checked by the store.
type seriesKey struct {
	Strategy string
	Variant  string
	Fencing  bool
}

func keyOf(s *results.Summary) seriesKey { return seriesKey{s.Strategy, s.Variant, s.Fencing} }

func (k seriesKey) less(o seriesKey) bool {
	ri, rj := strategyRank(k.Strategy), strategyRank(o.Strategy)
	if ri != rj {
		return ri < rj
	}
	if k.Strategy != o.Strategy {
		return k.Strategy < o.Strategy
	}
	if k.Variant != o.Variant {
		return k.Variant < o.Variant
	}
	return !k.Fencing && o.Fencing
}

// name is the strategy with its variant: "mutex [instances=1]".
func (k seriesKey) name() string {
	if k.Variant == "" {
		return k.Strategy
	}
	return k.Strategy + " [" + k.Variant + "]"
}

// labeler names series. A strategy that ran both with and without fencing
// in the same set gets "(fenced)" or "(unfenced)" after its name; one that
// ran only one way keeps its plain name.
type labeler map[string]int // strategy → bit 1: unfenced seen, bit 2: fenced seen

func newLabeler(ss []results.Summary) labeler {
	l := labeler{}
	for i := range ss {
		l.add(&ss[i])
	}
	return l
}

func newRunLabeler(runs []results.Run) labeler {
	l := labeler{}
	for i := range runs {
		l.add(&runs[i].Summary)
	}
	return l
}

func (l labeler) add(s *results.Summary) {
	if s.Fencing {
		l[s.Strategy] |= 2
	} else {
		l[s.Strategy] |= 1
	}
}

func (l labeler) label(k seriesKey) string {
	if l[k.Strategy] != 3 {
		return k.name()
	}
	if k.Fencing {
		return k.name() + " (fenced)"
	}
	return k.name() + " (unfenced)"
}

// split reports whether k's strategy ran both ways, so its unfenced line
// must look different from its fenced one.
func (l labeler) split(k seriesKey) bool { return l[k.Strategy] == 3 }

// sortedKeys returns the distinct series of ss in legend order.
func sortedKeys(ss []results.Summary) []seriesKey {
	seen := map[seriesKey]bool{}
	var keys []seriesKey
	for i := range ss {
		k := keyOf(&ss[i])
		if !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	sort.SliceStable(keys, func(i, j int) bool { return keys[i].less(keys[j]) })
	return keys
}
