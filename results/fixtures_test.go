package results

import (
	"flag"
	"hash/fnv"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// fixture describes one synthetic run. These runs test our encoders, not a
// strategy: their numbers are made up, but deterministic.
type fixture struct {
	strategy, scenario, fault string
	fencing                   bool
	// acquireNs is the median acquire latency.
	acquireNs float64
	// intervals is the number of 1-second intervals; 0 records only the
	// whole-run histograms.
	intervals int
	// window is the fault window in seconds; latencies inside it are 40×.
	window *[2]int
	params Params
	pps    float64
	set    func(s *Summary)
}

var baseParams = Params{
	Instances: 2, Workers: 4, DeliveriesEach: 2, Accounts: 100, AccountDist: "uniform",
	LockKey: "account", Rate: 1000, Hold: "1ms", TTLNs: int64(100 * time.Millisecond),
	Store: "memory", InstanceMode: "process", Seed: 1,
}

const samplesPerInterval = 120

func makeRun(f fixture) Run {
	h := fnv.New64a()
	h.Write([]byte(f.strategy + "/" + f.scenario + "/" + f.fault))
	rng := &splitmix{h.Sum64()}
	sample := func(rec func(Phase, time.Duration), factor float64) {
		acq := f.acquireNs * math.Exp(rng.NormFloat64()*0.5) * factor
		if rng.IntN(100) == 0 {
			acq *= 20 // a tail
		}
		crit := 1e6 * math.Exp(rng.NormFloat64()*0.2)
		rel := f.acquireNs * 0.3 * math.Exp(rng.NormFloat64()*0.3)
		rec(Acquire, time.Duration(acq))
		rec(Critical, time.Duration(crit))
		rec(Release, time.Duration(rel))
		rec(Total, time.Duration(acq+crit+rel))
	}
	run := Run{Total: NewPhaseSet()}
	if f.intervals == 0 {
		rec := NewRecorder()
		for i := 0; i < 10*samplesPerInterval; i++ {
			sample(rec.Record, 1)
		}
		run.Total = NewPhaseSet()
		rec.Drain(run.Total, OutcomeSet{})
	}
	for i := 0; i < f.intervals; i++ {
		rec := NewRecorder()
		factor := 1.0
		if f.window != nil && i >= f.window[0] && i < f.window[1] {
			factor = 40
		}
		n := samplesPerInterval
		if f.window != nil && i == f.window[0] {
			n = 0 // a stall: nothing completes in the first second of the fault
		}
		for j := 0; j < n; j++ {
			sample(rec.Record, factor)
		}
		iv := Interval{StartNs: int64(i) * 1e9, EndNs: int64(i+1) * 1e9, Hists: NewPhaseSet()}
		rec.Drain(iv.Hists, OutcomeSet{})
		run.Total.Merge(iv.Hists)
		run.Intervals = append(run.Intervals, iv)
	}
	secs := f.intervals
	if secs == 0 {
		secs = 10
	}
	params := f.params
	if params == (Params{}) {
		params = baseParams
	}
	fault := f.fault
	if fault == "" {
		fault = FaultNone
	}
	s := Summary{
		Strategy: f.strategy, Scenario: f.scenario, Fault: fault, Fencing: f.fencing,
		Payments: 1000, Deliveries: 2000, Processed: 1000,
		NotAcquired:    1000,
		Errors:         map[string]int64{},
		PaymentsPerSec: f.pps, OpsPerSec: 2 * f.pps,
		DurationNs: int64(secs) * 1e9,
		Params:     params,
		Latency:    run.Total.Latencies(),
	}
	if f.window != nil {
		s.FaultWindow = &Window{StartNs: int64(f.window[0]) * 1e9, EndNs: int64(f.window[1]) * 1e9}
		s.FaultEvents = []Event{{AtNs: s.FaultWindow.StartNs, What: f.fault + " started"}}
	}
	if f.set != nil {
		f.set(&s)
	}
	s.Finish()
	run.Summary = s
	return run
}

// baseFixtures are the fault-free runs of one `lockbench run`.
func baseFixtures(intervals int) []fixture {
	return []fixture{
		{strategy: "nolock", scenario: "base", acquireNs: 800, intervals: intervals, pps: 980, set: func(s *Summary) {
			s.Duplicates, s.Overdrafts, s.LostUpdates, s.Overlaps, s.NotAcquired = 412, 3, 17, 530, 0
		}},
		{strategy: "mutex", scenario: "base", acquireNs: 1500, intervals: intervals, pps: 975, set: func(s *Summary) {
			s.Duplicates, s.Overlaps = 37, 40
		}},
		{strategy: "setnx", scenario: "base", acquireNs: 250e3, intervals: intervals, pps: 960},
		{strategy: "fencing", scenario: "base", fencing: true, acquireNs: 300e3, intervals: intervals, pps: 955},
		{strategy: "redlock", scenario: "base", acquireNs: 900e3, intervals: intervals, pps: 900, set: func(s *Summary) {
			s.Errors = map[string]int64{"timeout": 2}
		}},
		{strategy: "etcd", scenario: "base", fencing: true, acquireNs: 2.5e6, intervals: intervals, pps: 610},
		{strategy: "pg-onconflict", scenario: "base", fencing: true, acquireNs: 1.2e6, intervals: intervals, pps: 720, set: func(s *Summary) {
			s.Unprocessed, s.Processed = 4, 996
			s.Errors = map[string]int64{"refused": 1, "other": 3, "serialization": 2}
		}},
	}
}

// verdictFixtures are the fault runs of `lockbench verdicts` (a subset).
func verdictFixtures(withIntervals bool) []fixture {
	iv := 0
	win := &[2]int{4, 7}
	if withIntervals {
		iv = 12
	}
	var out []fixture
	type row struct {
		strategy string
		fencing  bool
		acq      float64
		pause    func(s *Summary)
	}
	rows := []row{
		{"setnx", false, 250e3, func(s *Summary) { s.Duplicates, s.Overlaps = 9, 9 }},
		{"fencing", true, 300e3, func(s *Summary) { s.Overlaps, s.StaleRejected = 8, 8 }},
		{"redlock", false, 900e3, func(s *Summary) { s.Duplicates, s.Overlaps = 7, 7 }},
		{"redlock", true, 900e3, func(s *Summary) { s.Overlaps, s.StaleRejected = 7, 7 }},
		{"etcd", false, 2.5e6, func(s *Summary) { s.Duplicates, s.LostUpdates, s.Overlaps = 3, 2500, 3 }},
		{"etcd", true, 2.5e6, func(s *Summary) { s.Overlaps, s.StaleRejected = 3, 3 }},
	}
	for _, r := range rows {
		out = append(out,
			fixture{strategy: r.strategy, scenario: "verdicts", fault: "none", fencing: r.fencing, acquireNs: r.acq, pps: 900},
			fixture{strategy: r.strategy, scenario: "verdicts", fault: "pause", fencing: r.fencing, acquireNs: r.acq,
				intervals: iv, window: win, pps: 700, set: r.pause},
		)
	}
	out = append(out,
		fixture{strategy: "setnx", scenario: "verdicts", fault: "kill-node", acquireNs: 250e3, pps: 300, set: func(s *Summary) {
			s.Unprocessed, s.Processed = 380, 620
			s.Errors = map[string]int64{"refused": 380}
		}},
		fixture{strategy: "redlock", scenario: "verdicts", fault: "kill-node", acquireNs: 950e3, pps: 880},
	)
	return out
}

// sweepFixtures are a contention sweep and a rate sweep for a few
// strategies, without intervals.
func sweepFixtures() []fixture {
	var out []fixture
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
			p := baseParams
			p.Accounts = accounts
			c := p.Contenders()
			out = append(out, fixture{strategy: st.name, scenario: "contention", fencing: st.fencing,
				acquireNs: st.acq * c, params: p, pps: st.cap / math.Sqrt(c)})
		}
		for _, rate := range []float64{500, 1000, 2000, 4000, 8000} {
			p := baseParams
			p.Rate = rate
			load := rate / st.cap
			out = append(out, fixture{strategy: st.name, scenario: "sweep", fencing: st.fencing,
				acquireNs: st.acq * (1 + 50*math.Pow(load, 4)), params: p, pps: math.Min(rate, st.cap)})
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

func makeRuns(fs []fixture) []Run {
	runs := make([]Run, len(fs))
	for i, f := range fs {
		runs[i] = makeRun(f)
	}
	return runs
}

func testMeta() Meta {
	return Meta{
		Title:   "lockbench: test fixtures",
		Command: "lockbench run --rate 1000 --duration 10s",
		Date:    time.Date(2025, 11, 29, 22, 35, 0, 0, time.UTC),
		Host:    Host{OS: "linux", Arch: "amd64", NumCPU: 2, CPU: "Test CPU @ 2.0GHz", GoVersion: "go1.26.8"},
		Notes:   []string{"Synthetic runs for the results package's tests."},
	}
}

// golden compares got with testdata/name, rewriting it under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if string(got) != string(want) {
		t.Errorf("%s differs from the golden file (go test -update rewrites it):\ngot:\n%s\nwant:\n%s", name, got, want)
	}
}

func summariesOfFixtures(fs []fixture) []Summary {
	ss := make([]Summary, len(fs))
	for i, f := range fs {
		f.intervals = 0
		ss[i] = makeRun(f).Summary
	}
	return ss
}
