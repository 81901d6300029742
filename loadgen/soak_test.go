package loadgen

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockbench/lockbench/loadgen/store"
	"github.com/lockbench/lockbench/results"
	"github.com/lockbench/lockbench/strategies"
)

// EnvSoak names the duration of TestSoak (e.g. 3m); unset, the test is
// skipped: it takes that long and both cores, so make test does not run it
// (scripts/soak.sh runs the command's soak).
const EnvSoak = "LOCKBENCH_SOAK"

// TestSoak is a closed-loop nolock run at full rate for $LOCKBENCH_SOAK,
// its intervals streamed to interval logs (Options.StreamIntervals), with the
// process's resident memory sampled every second. The figure at one third
// of the run and the one just before its end are each the highest sample
// of the soakWindow before it (a single sample lands anywhere on the
// garbage collector's sawtooth); the second may not be more than 10%
// above the first (it may be below). The store's payments and the
// intervals are what grew with the run's length before; neither may now.
func TestSoak(t *testing.T) {
	v := os.Getenv(EnvSoak)
	if v == "" {
		t.Skipf("set %s=3m to run a soak of that length", EnvSoak)
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 15*time.Second {
		t.Fatalf("%s=%q: want a duration of at least 15s", EnvSoak, v)
	}
	sc := DefaultScenario()
	sc.Payments, sc.Duration, sc.Instances, sc.Deliveries = 0, d, 1, 1
	sc.Hold, _ = ParseHold("0s")
	stream, err := results.NewHlogStream(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	mem := store.NewMemory()
	o := Options{Strategy: strategies.MustLookup("nolock"), Scenario: sc, Store: mem, Reporter: Intervals(stream.Write), StreamIntervals: true}
	marks := [2]time.Duration{d / 3, d - 3*time.Second}
	var highest [2]int64
	done := make(chan struct{})
	start := time.Now()
	go func() {
		defer close(done)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for now := range tick.C {
			at := now.Sub(start)
			if at > marks[1] {
				return
			}
			kb := residentKB()
			for i, m := range marks {
				if at > m-soakWindow && at <= m {
					highest[i] = max(highest[i], kb)
				}
			}
		}
	}()
	r, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	<-done
	first, last := highest[0], highest[1]
	ratio := float64(last) / float64(first)
	t.Logf("%d payments in %s (%.0f/s), %d intervals streamed; RSS %d kB at %s, %d kB at %s: ratio %.3f; store tracks %d payments",
		r.Summary.Payments, d, r.Summary.PaymentsPerSec, stream.Len(), first, marks[0], last, marks[1], ratio, mem.Tracked())
	if first <= 0 || ratio > 1.1 {
		t.Errorf("RSS %d kB at %s, %d kB at %s: ratio %.3f; want at most 1.1", first, marks[0], last, marks[1], ratio)
	}
	if time.Duration(r.Summary.DurationNs) < d {
		t.Errorf("the run measured %s; want its whole duration %s", time.Duration(r.Summary.DurationNs), d)
	}
}

// soakWindow is how far back from each of TestSoak's marks its figure
// looks: 10 seconds.
const soakWindow = 10 * time.Second

// residentKB is this process's VmRSS in kB, 0 when unknown (TestSoak
// then fails: its first figure must be above 0).
func residentKB() int64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(data)) {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return n
		}
	}
	return 0
}
