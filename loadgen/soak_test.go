package loadgen

import (
	"bufio"
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockbench/lockbench/loadgen/store"
	"github.com/lockbench/lockbench/results"
)

// EnvSoak names the duration of TestSoak (e.g. 3m); unset, the test is
// skipped: it takes that long and both cores, so make test does not run it
// (scripts/soak.sh runs the command's soak).
const EnvSoak = "LOCKBENCH_SOAK"

// TestSoak is a closed-loop nolock run at full rate for $LOCKBENCH_SOAK,
// its intervals streamed to interval logs (Options.IntervalLog), with the
// process's resident memory sampled at one third of the run and just
// before its end: the second may not be more than 10% above the first
// (it may be below: the runtime returns memory it no longer needs). The
// store's payments and the intervals are what grew with the run's length
// before; neither may now.
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
	o := Options{Strategy: "nolock", Scenario: sc, Store: mem, IntervalLog: stream.Write}
	marks := []time.Duration{d / 3, d - 3*time.Second}
	rss := make(chan int64, len(marks))
	start := time.Now()
	go func() {
		for _, m := range marks {
			time.Sleep(time.Until(start.Add(m)))
			rss <- residentKB(t)
		}
	}()
	r, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	first, last := <-rss, <-rss
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

// residentKB is this process's VmRSS in kB.
func residentKB(t *testing.T) int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Errorf("RSS: %v", err)
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return n
		}
	}
	t.Errorf("RSS: no VmRSS in /proc/self/status")
	return 0
}
