// Package resultstest makes synthetic runs for the tests of results and
// report: deterministic numbers, made up, that test the encoders and
// renderers, not a strategy.
package resultstest

import (
	"hash/fnv"
	"math"
	"time"

	"github.com/lockbench/lockbench/results"
)

// Fixture describes one synthetic run. These runs test our encoders, not a
// strategy: their numbers are made up, but deterministic.
type Fixture struct {
	Strategy, Scenario, Fault string
	Fencing                   bool
	// acquireNs is the median acquire latency.
	AcquireNs float64
	// intervals is the number of 1-second intervals; 0 records only the
	// whole-run histograms.
	Intervals int
	// window is the fault window in seconds; latencies inside it are 40×.
	Window *[2]int
	Params results.Params
	PPS    float64
	Set    func(s *results.Summary)
}

// BaseParams are the fixtures' parameters unless one sets its own.
var BaseParams = results.Params{
	Instances: 2, Workers: 4, DeliveriesEach: 2, Accounts: 100, AccountDist: "uniform",
	LockKey: "account", Rate: 1000, Hold: "1ms", TTLNs: int64(100 * time.Millisecond),
	Store: "memory", InstanceMode: "process", Seed: 1,
}

const samplesPerInterval = 120

// MakeRun makes the run f describes.
func MakeRun(f Fixture) results.Run {
	h := fnv.New64a()
	h.Write([]byte(f.Strategy + "/" + f.Scenario + "/" + f.Fault))
	rng := &splitmix{h.Sum64()}
	sample := func(rec func(results.Phase, time.Duration), factor float64) {
		acq := f.AcquireNs * math.Exp(rng.NormFloat64()*0.5) * factor
		if rng.IntN(100) == 0 {
			acq *= 20 // a tail
		}
		crit := 1e6 * math.Exp(rng.NormFloat64()*0.2)
		rel := f.AcquireNs * 0.3 * math.Exp(rng.NormFloat64()*0.3)
		rec(results.Acquire, time.Duration(acq))
		rec(results.Critical, time.Duration(crit))
		rec(results.Release, time.Duration(rel))
		rec(results.Total, time.Duration(acq+crit+rel))
	}
	run := results.Run{Total: results.NewPhaseSet()}
	if f.Intervals == 0 {
		rec := results.NewRecorder()
		for i := 0; i < 10*samplesPerInterval; i++ {
			sample(rec.Record, 1)
		}
		run.Total = results.NewPhaseSet()
		rec.Drain(run.Total, results.OutcomeSet{})
	}
	for i := 0; i < f.Intervals; i++ {
		rec := results.NewRecorder()
		factor := 1.0
		if f.Window != nil && i >= f.Window[0] && i < f.Window[1] {
			factor = 40
		}
		n := samplesPerInterval
		if f.Window != nil && i == f.Window[0] {
			n = 0 // a stall: nothing completes in the first second of the fault
		}
		for j := 0; j < n; j++ {
			sample(rec.Record, factor)
		}
		iv := results.Interval{StartNs: int64(i) * 1e9, EndNs: int64(i+1) * 1e9, Hists: results.NewPhaseSet()}
		rec.Drain(iv.Hists, results.OutcomeSet{})
		run.Total.Merge(iv.Hists)
		run.Intervals = append(run.Intervals, iv)
	}
	secs := f.Intervals
	if secs == 0 {
		secs = 10
	}
	params := f.Params
	if params == (results.Params{}) {
		params = BaseParams
	}
	fault := f.Fault
	if fault == "" {
		fault = results.FaultNone
	}
	s := results.Summary{
		Strategy: f.Strategy, Scenario: f.Scenario, Fault: fault, Fencing: f.Fencing,
		Payments: 1000, Deliveries: 2000, Processed: 1000,
		NotAcquired:    1000,
		Errors:         map[string]int64{},
		PaymentsPerSec: f.PPS, OpsPerSec: 2 * f.PPS,
		DurationNs: int64(secs) * 1e9,
		Params:     params,
		Latency:    run.Total.Latencies(),
	}
	if fault != results.FaultNone {
		s.Strikes = 1 // a fault that never struck judges nothing
	}
	if f.Window != nil {
		s.FaultWindow = &results.Window{StartNs: int64(f.Window[0]) * 1e9, EndNs: int64(f.Window[1]) * 1e9}
		s.FaultEvents = []results.Event{{AtNs: s.FaultWindow.StartNs, What: f.Fault + " started"}}
	}
	if f.Set != nil {
		f.Set(&s)
	}
	s.Finish()
	run.Summary = s
	return run
}

// BaseFixtures are the fault-free runs of one `lockbench run`.
func BaseFixtures(intervals int) []Fixture {
	return []Fixture{
		{Strategy: "nolock", Scenario: "base", AcquireNs: 800, Intervals: intervals, PPS: 980, Set: func(s *results.Summary) {
			s.Duplicates, s.Overdrafts, s.LostUpdates, s.Overlaps, s.NotAcquired = 412, 3, 17, 530, 0
		}},
		{Strategy: "mutex", Scenario: "base", AcquireNs: 1500, Intervals: intervals, PPS: 975, Set: func(s *results.Summary) {
			s.Duplicates, s.Overlaps = 37, 40
		}},
		{Strategy: "setnx", Scenario: "base", AcquireNs: 250e3, Intervals: intervals, PPS: 960},
		{Strategy: "fencing", Scenario: "base", Fencing: true, AcquireNs: 300e3, Intervals: intervals, PPS: 955},
		{Strategy: "redlock", Scenario: "base", AcquireNs: 900e3, Intervals: intervals, PPS: 900, Set: func(s *results.Summary) {
			s.Errors = map[string]int64{"timeout": 2}
		}},
		{Strategy: "etcd", Scenario: "base", Fencing: true, AcquireNs: 2.5e6, Intervals: intervals, PPS: 610},
		{Strategy: "pg-onconflict", Scenario: "base", Fencing: true, AcquireNs: 1.2e6, Intervals: intervals, PPS: 720, Set: func(s *results.Summary) {
			s.Unprocessed, s.Processed = 4, 996
			s.Errors = map[string]int64{"refused": 1, "other": 3, "serialization": 2}
		}},
	}
}

// VerdictFixtures are the fault runs of `lockbench verdicts` (a subset).
func VerdictFixtures(withIntervals bool) []Fixture {
	iv := 0
	win := &[2]int{4, 7}
	if withIntervals {
		iv = 12
	}
	var out []Fixture
	type row struct {
		strategy string
		fencing  bool
		acq      float64
		pause    func(s *results.Summary)
	}
	rows := []row{
		{"setnx", false, 250e3, func(s *results.Summary) { s.Duplicates, s.Overlaps = 9, 9 }},
		{"fencing", true, 300e3, func(s *results.Summary) { s.Overlaps, s.StaleRejected = 8, 8 }},
		{"redlock", false, 900e3, func(s *results.Summary) { s.Duplicates, s.Overlaps = 7, 7 }},
		{"redlock", true, 900e3, func(s *results.Summary) { s.Overlaps, s.StaleRejected = 7, 7 }},
		{"etcd", false, 2.5e6, func(s *results.Summary) { s.Duplicates, s.LostUpdates, s.Overlaps = 3, 2500, 3 }},
		{"etcd", true, 2.5e6, func(s *results.Summary) { s.Overlaps, s.StaleRejected = 3, 3 }},
	}
	for _, r := range rows {
		out = append(out,
			Fixture{Strategy: r.strategy, Scenario: "verdicts", Fault: "none", Fencing: r.fencing, AcquireNs: r.acq, PPS: 900},
			Fixture{Strategy: r.strategy, Scenario: "verdicts", Fault: "pause", Fencing: r.fencing, AcquireNs: r.acq,
				Intervals: iv, Window: win, PPS: 700, Set: r.pause},
		)
	}
	out = append(out,
		Fixture{Strategy: "setnx", Scenario: "verdicts", Fault: "kill-node", AcquireNs: 250e3, PPS: 300, Set: func(s *results.Summary) {
			s.Unprocessed, s.Processed = 380, 620
			s.Errors = map[string]int64{"refused": 380}
		}},
		Fixture{Strategy: "redlock", Scenario: "verdicts", Fault: "kill-node", AcquireNs: 950e3, PPS: 880},
	)
	return out
}

// SweepFixtures are a contention sweep and a rate sweep for a few
// strategies, without intervals.
func SweepFixtures() []Fixture {
	var out []Fixture
	strategies := []struct {
		name    string
		fencing bool
		acq     float64
		cap     float64 // payments/s at which it saturates
	}{
		{"setnx", false, 250e3, 6000},
		{"fencing", true, 300e3, 5200},
		{"etcd", true, 2.5e6, 1800},
	}
	for _, st := range strategies {
		for _, accounts := range []int{8, 4, 2, 1} {
			p := BaseParams
			p.Accounts = accounts
			c := p.Contenders()
			out = append(out, Fixture{Strategy: st.name, Scenario: "contention", Fencing: st.fencing,
				AcquireNs: st.acq * c, Params: p, PPS: st.cap / math.Sqrt(c)})
		}
		for _, rate := range []float64{500, 1000, 2000, 4000, 8000} {
			p := BaseParams
			p.Rate = rate
			load := rate / st.cap
			out = append(out, Fixture{Strategy: st.name, Scenario: "sweep", Fencing: st.fencing,
				AcquireNs: st.acq * (1 + 50*math.Pow(load, 4)), Params: p, PPS: math.Min(rate, st.cap)})
		}
	}
	return out
}

// splitmix is SplitMix64 with a normal deviate: a generator defined here,
// so the golden files do not change when math/rand's algorithms do.
type splitmix struct{ s uint64 }

func (r *splitmix) Uint64() uint64 {
	r.s += 0x9e3779b97f4a7c15
	z := r.s
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

func (r *splitmix) Float64() float64 { return float64(r.Uint64()>>11) / (1 << 53) }

func (r *splitmix) IntN(n int) int { return int(r.Uint64() % uint64(n)) }

// NormFloat64 is Box-Muller.
func (r *splitmix) NormFloat64() float64 {
	u1 := r.Float64()
	for u1 == 0 {
		u1 = r.Float64()
	}
	return math.Sqrt(-2*math.Log(u1)) * math.Cos(2*math.Pi*r.Float64())
}

// MakeRuns makes a run of each fixture.
func MakeRuns(fs []Fixture) []results.Run {
	runs := make([]results.Run, len(fs))
	for i, f := range fs {
		runs[i] = MakeRun(f)
	}
	return runs
}

// TestMeta is the meta.json of the fixtures' run directory.
func TestMeta() results.Meta {
	return results.Meta{
		Title:   "lockbench: test fixtures",
		Command: "lockbench run --rate 1000 --duration 10s",
		Date:    time.Date(2025, 11, 29, 22, 35, 0, 0, time.UTC),
		Host:    results.Host{OS: "linux", Arch: "amd64", NumCPU: 2, CPU: "Test CPU @ 2.0GHz", GoVersion: "go1.26.8"},
		Notes:   []string{"Synthetic runs for the results package's tests."},
	}
}

// Summaries are the fixtures' summaries, without intervals.
func Summaries(fs []Fixture) []results.Summary {
	ss := make([]results.Summary, len(fs))
	for i, f := range fs {
		f.Intervals = 0
		ss[i] = MakeRun(f).Summary
	}
	return ss
}

// TrialRuns are n trials of one cell: setnx under pause, trial k with
// seed k, payments/s 900+10k, acquire p99 1ms+k·0.1ms over 2,000 acquires;
// the trials in unsafe lost safety.
func TrialRuns(n int, unsafe map[int]bool) []results.Summary {
	var ss []results.Summary
	for k := 1; k <= n; k++ {
		s := results.Summary{Strategy: "setnx", Scenario: "verdicts", Fault: "pause", Trial: k,
			Payments: 350, Processed: 350, PaymentsPerSec: 900 + 10*float64(k),
			Strikes: 1, Params: results.Params{Instances: 2, Workers: 4, Seed: int64(k), Payments: 350, Fault: "pause"},
			Latency: map[string]results.Latency{"acquire": {P50: 1e5, P99: int64(1e6 + 1e5*float64(k)), Count: 2000}}}
		if unsafe[k] {
			s.Duplicates, s.UnsafeStrikes = 3, 1
		}
		s.Finish()
		ss = append(ss, s)
	}
	return ss
}
