package selfcheck

import (
	"bytes"
	"context"
	"math"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"
)

// testProfile is a CPU profile with samples of the given counts, each
// with a stack of the named functions (leaf first) and, unless "", the
// measure label.
func testProfile(samples ...struct {
	label string
	stack []string
	n     int64
}) *profile.Profile {
	p := &profile.Profile{SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}}}
	funcs := map[string]*profile.Location{}
	for _, s := range samples {
		var locs []*profile.Location
		for _, name := range s.stack {
			loc, ok := funcs[name]
			if !ok {
				fn := &profile.Function{ID: uint64(len(p.Function) + 1), Name: name}
				p.Function = append(p.Function, fn)
				loc = &profile.Location{ID: uint64(len(p.Location) + 1), Line: []profile.Line{{Function: fn}}}
				p.Location = append(p.Location, loc)
				funcs[name] = loc
			}
			locs = append(locs, loc)
		}
		var labels map[string][]string
		if s.label != "" {
			labels = map[string][]string{"measure": {s.label}}
		}
		p.Sample = append(p.Sample, &profile.Sample{Location: locs, Value: []int64{s.n, s.n * 10_000_000}, Label: labels})
	}
	return p
}

// A sample counts as the library's when any frame of its stack is in one
// of the library's packages, whatever calls it or it calls (the runtime
// under a go-redis call is the call's); the rest of a labelled
// measurement's samples are the loop's or the harness's; unlabelled
// samples (the runtime's own goroutines) are in neither.
func TestSplitProfile(t *testing.T) {
	type s = struct {
		label string
		stack []string
		n     int64
	}
	p := testProfile(
		s{"bare", []string{"internal/runtime/syscall/linux.Syscall6", "github.com/redis/go-redis/v9.(*Client).Process", "main.loop"}, 90},
		s{"bare", []string{"context.WithTimeout", "main.loop"}, 10},
		s{"lockbench", []string{"runtime.mallocgc", "github.com/redis/go-redis/v9/internal/pool.(*Conn).Write", "strategies/setnx.(*SetNX).Acquire", "loadgen.(*worker).process"}, 90},
		s{"lockbench", []string{"results.(*Recorder).RecordCycleOutcome", "loadgen.(*worker).process"}, 20},
		s{"lockbench", []string{"loadgen.dispatch"}, 5},
		s{"", []string{"runtime.findRunnable", "runtime.schedule"}, 1000},
		s{"other", []string{"main.loop"}, 1000},
	)
	bare, ours := splitProfile(p, []string{"github.com/redis/go-redis/"})
	if want := (profileSplit{library: 90, rest: 10}); bare != want {
		t.Errorf("bare = %+v; want %+v", bare, want)
	}
	if want := (profileSplit{library: 90, rest: 25}); ours != want {
		t.Errorf("lockbench = %+v; want %+v", ours, want)
	}
	// (1 + 25/90) / (1 + 10/90) = 115/100.
	if got := ours.ratioTo(bare); math.Abs(got-1.15) > 1e-9 {
		t.Errorf("ratio = %v; want 1.15", got)
	}
}

// The split's closing line: the shares outside the library, the ratio
// and the harness's µs from the bare client's CPU per cycle; none when a
// measurement has too few samples to say.
func TestPrintProfileSplit(t *testing.T) {
	c := comparison{bare: "go-redis alone", bareShort: "go-redis"}
	var out bytes.Buffer
	c.printProfileSplit(&out, profileSplit{library: 900, rest: 100}, profileSplit{library: 900, rest: 250}, 40)
	want := "cpu per cycle by profile (within each measurement, go-redis's calls as the yardstick; far steadier than the rates under steal; blind to the harness slowing those calls): outside go-redis, go-redis alone 10.0% of 1000 samples, lockbench 21.7% of 1150; lockbench / go-redis alone 1.15, the harness +6.0 µs\n"
	if out.String() != want {
		t.Errorf("got\n%q\nwant\n%q", out.String(), want)
	}
	out.Reset()
	c.printProfileSplit(&out, profileSplit{library: 90, rest: 10}, profileSplit{library: 900, rest: 250}, 40)
	if out.Len() != 0 {
		t.Errorf("with 100 samples of the bare client: printed %q; want nothing", out.String())
	}
}

// A comparison profiles its counted rounds (not the warm-up), labels each
// measurement's samples, writes the profile to --cpuprofile's file, and
// prints the split when the measurements ran long enough to be sampled.
func TestComparisonProfile(t *testing.T) {
	if testing.Short() {
		t.Skip("burns CPU for a few seconds to be sampled; skipped with -short")
	}
	path := filepath.Join(t.TempDir(), "cpu.prof")
	// spin burns d of this process's CPU (at most a minute of wall time),
	// a share of each cycle's fixed work in a function standing for the
	// library (the test binary's own package, selfcheck, is the library
	// here: its frames are the only ones both loops share by name). The
	// work is counted in iterations, not timed, so that a descheduled
	// thread or a slow clock cannot move the share; and in CPU time, not
	// wall time, so that a busy machine leaves it as many samples.
	spin := func(d time.Duration, library float64) cycleRate {
		const perCycle = 50_000
		lib := int(perCycle * library)
		cpuEnd, wallEnd := processCPU()+d, time.Now().Add(time.Minute)
		for processCPU() < cpuEnd && time.Now().Before(wallEnd) {
			sink ^= burn(lib)
			sink ^= work(perCycle - lib)
		}
		return cycleRate{perSec: 1000, cpu: 10 * time.Microsecond}
	}
	c := comparison{name: "test", native: "tool", bare: "client alone", ours: "lockbench x",
		nativeShort: "tool", bareShort: "client", bareWhy: "why", rounds: 2, profile: path,
		library: []string{"github.com/lockbench/lockbench/bench/selfcheck.burn"}}
	c.measure[0] = func() (cycleRate, error) { return cycleRate{perSec: 2000, cpu: 5 * time.Microsecond}, nil }
	c.measure[1] = func() (cycleRate, error) {
		return measured(context.Background(), "bare", func() (cycleRate, error) { return spin(1500*time.Millisecond, 0.9), nil })
	}
	c.measure[2] = func() (cycleRate, error) {
		return measured(context.Background(), "lockbench", func() (cycleRate, error) { return spin(1500*time.Millisecond, 0.6), nil })
	}
	var out bytes.Buffer
	if err := c.run(context.Background(), &out, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, err := profile.Parse(f)
	if err != nil {
		t.Fatalf("--cpuprofile's file: %v", err)
	}
	bare, ours := splitProfile(p, c.library)
	t.Logf("bare %+v, lockbench %+v\n%s", bare, ours, out.String())
	if bare.library == 0 || ours.library == 0 {
		t.Fatalf("no samples in the library's function: bare %+v, lockbench %+v", bare, ours)
	}
	// 10% and 40% outside the library, give or take the sampling.
	if s := bare.restShare(); s < 0.03 || s > 0.25 {
		t.Errorf("bare: %.0f%% outside the library; want about 10%%", 100*s)
	}
	if s := ours.restShare(); s < 0.25 || s > 0.55 {
		t.Errorf("lockbench: %.0f%% outside the library; want about 40%%", 100*s)
	}
	if bare.library+bare.rest >= minProfileSamples && ours.library+ours.rest >= minProfileSamples &&
		!strings.Contains(out.String(), "cpu per cycle by profile") {
		t.Errorf("no profile line in:\n%s", out.String())
	}
}

// burn does n iterations of work inside the stand-in library's call in
// TestComparisonProfile.
//
//go:noinline
func burn(n int) uint64 { return work(n) }

// work does n iterations of a xorshift that the compiler cannot drop, the
// same code whoever calls it.
//
//go:noinline
func work(n int) uint64 {
	x := uint64(n) | 1
	for i := 0; i < n; i++ {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
	}
	return x
}

// sink keeps work's results alive.
var sink uint64

// The profile split does not fail a comparison when another CPU profile
// is running in the process (a test binary's -cpuprofile): it is left
// out. With --cpuprofile it is an error, as before.
func TestComparisonProfileBusy(t *testing.T) {
	var other bytes.Buffer
	if err := pprof.StartCPUProfile(&other); err != nil {
		t.Skipf("a CPU profile is already running: %v", err)
	}
	defer pprof.StopCPUProfile()
	c := comparison{name: "test", native: "tool", bare: "client alone", ours: "lockbench x",
		nativeShort: "tool", bareShort: "client", bareWhy: "why", rounds: 1}
	for i := range c.measure {
		c.measure[i] = func() (cycleRate, error) { return cycleRate{perSec: 100, cpu: time.Microsecond}, nil }
	}
	if err := c.run(context.Background(), &bytes.Buffer{}, &bytes.Buffer{}); err != nil {
		t.Errorf("without --cpuprofile: %v; want no error", err)
	}
	c.profile = filepath.Join(t.TempDir(), "cpu.prof")
	if err := c.run(context.Background(), &bytes.Buffer{}, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "--cpuprofile") {
		t.Errorf("with --cpuprofile: %v; want an error naming --cpuprofile", err)
	}
}
