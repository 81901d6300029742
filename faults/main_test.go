package faults_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/lockbench/lockbench/faults"
	"github.com/lockbench/lockbench/loadgen"
	"github.com/lockbench/lockbench/loadgen/store"
	"github.com/lockbench/lockbench/results"
	"github.com/lockbench/lockbench/servers"
	_ "github.com/lockbench/lockbench/servers/adapterenv" // adapters reach the servers
	"github.com/lockbench/lockbench/strategies"
	_ "github.com/lockbench/lockbench/strategies/all"
)

// The tests share one set of servers, started before them (so that no
// test's time includes it) unless -short, and stopped when all are done:
// five Redis nodes under libfaketime (clock-jump moves their clocks), one
// etcd member and Postgres.
var cluster *servers.Cluster

// startTimeout bounds starting the shared servers: 3 minutes, for a
// first apt-get install or a busy machine (a hang).
const startTimeout = 3 * time.Minute

func TestMain(m *testing.M) {
	// Instance processes re-execute the test binary.
	loadgen.MaybeRunChild()
	flag.Parse()
	if !testing.Short() {
		ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
		c, err := servers.Start(ctx, servers.NeedsOf(strategies.All()), servers.Options{Faketime: true})
		cancel()
		if err != nil {
			fmt.Fprintln(os.Stderr, "starting servers:", err)
			os.Exit(1)
		}
		cluster = c
	}
	code := m.Run()
	if cluster != nil {
		if err := cluster.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping the servers:", err)
			code = 1
		}
	}
	os.Exit(code)
}

func sharedServers(t *testing.T) *servers.Cluster {
	t.Helper()
	if cluster == nil {
		t.Skip("needs servers; skipped with -short")
	}
	return cluster
}

// runTimeout bounds each run, from its own start, so that no run inherits
// what an earlier one left of a shared deadline: 55 seconds, a hang.
const runTimeout = 55 * time.Second

// small is the scenario of the fault tests: two instances that each get
// every payment, few accounts, a 1s TTL, 5ms of work, 100 payments a second,
// a 10s acquire timeout.
func small(payments int, fencing bool) loadgen.Scenario {
	sc := loadgen.DefaultScenario()
	sc.Name = "faults-test"
	sc.Instances, sc.Deliveries, sc.Workers = 2, 2, 2
	sc.Accounts = 5
	sc.TTL = time.Second
	sc.Hold, _ = loadgen.ParseHold("5ms")
	sc.Rate = 100
	// Contenders wait long enough for a lease to lapse under a loaded
	// machine (the race detector slows the etcd member too).
	sc.AcquireTimeout = 10 * time.Second
	sc.Payments = payments
	sc.Fencing = fencing
	return sc
}

// missedTries is how many runs run makes, at most, for one whose designed
// strike found no holder to catch: a busy machine can leave small runs
// without the moment the strike waits for (TestSlow/etcd missed 3 in a
// row under BUSY=2); missedPause apart, to let a burst of load pass.
const (
	missedTries = 6
	missedPause = 2 * time.Second
)

// run runs strategy through sc under fault (a --fault value) against the
// shared servers and returns what was measured, each run within
// runTimeout. A run whose fault struck nobody ("not injected") must be
// unknown, never judged; it is run again, up to missedTries runs.
func run(t *testing.T, strategy, fault string, sc loadgen.Scenario) results.Run {
	t.Helper()
	var r results.Run
	for try := 1; try <= missedTries; try++ {
		r = runOnce(t, strategy, fault, sc)
		if !missedAll(r.Summary) {
			return r
		}
		if !r.Summary.Unknown() {
			t.Errorf("%s under %s: no strike landed, yet the run is %s; want unknown", strategy, fault, r.Summary.Label())
		}
		t.Logf("%s under %s: run %d of %d: the fault struck nobody (unknown); running again", strategy, fault, try, missedTries)
		if try < missedTries {
			time.Sleep(missedPause)
		}
	}
	return r
}

// missedAll reports whether the run's fault tried to strike and caught
// nobody, every time.
func missedAll(s results.Summary) bool {
	if s.FaultWindow != nil {
		return false
	}
	for _, e := range s.FaultEvents {
		if strings.Contains(e.What, "not injected") {
			return true
		}
	}
	return false
}

// runOnce is one run of run.
func runOnce(t *testing.T, strategy, fault string, sc loadgen.Scenario) results.Run {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	c := sharedServers(t)
	spec, err := faults.Parse(fault)
	if err != nil {
		t.Fatal(err)
	}
	if sc, err = spec.Adjust(sc); err != nil {
		t.Fatal(err)
	}
	info, ok := strategies.Lookup(strategy)
	if !ok {
		t.Fatalf("strategy %q not registered", strategy)
	}
	target, err := servers.TargetFor(info.Need, c.Endpoints(), c)
	if err != nil {
		t.Fatal(err)
	}
	f, err := spec.New(target)
	if err != nil {
		t.Fatal(err)
	}
	var st store.Store = store.NewMemory()
	if sc.Store == loadgen.StorePostgres {
		pg, err := store.NewPostgres(ctx, c.Endpoints().PostgresDSN)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = pg.Close() })
		st = pg
	}
	began := time.Now()
	o := loadgen.Options{
		Strategy: strategies.MustLookup(strategy),
		Scenario: sc,
		Lock:     target.Config,
		Store:    st,
		Fault:    f,
		// Set by the sequenced store's tests (seqstore_test.go).
		StoreTransport: seqTransport,
		Reporter:       seqObserver,
	}
	dir, history, hf := withHistory(t, &o)
	r, err := loadgen.Run(ctx, o)
	err = errors.Join(err, hf.Close())
	if err != nil {
		t.Fatalf("%s under %s: %v", strategy, fault, err)
	}
	if ctx.Err() != nil {
		t.Fatalf("%s under %s: the run did not finish within %s", strategy, fault, runTimeout)
	}
	s := r.Summary
	t.Logf("%s under %s (fencing %v) in %s: %s; duplicates %d, overlaps %d, lost %d, lost updates %d, stale rejected %d, stale accepted %d, processed %d/%d, not acquired %d, errors %v",
		strategy, fault, s.Fencing, time.Since(began).Round(time.Millisecond), s.Label(), s.Duplicates, s.Overlaps, s.Lost, s.LostUpdates,
		s.StaleRejected, s.StaleAccepted, s.Processed, s.Payments, s.NotAcquired, s.Errors)
	for _, e := range s.FaultEvents {
		t.Logf("  %6.3fs %s", time.Duration(e.AtNs).Seconds(), e.What)
	}
	secondJudge(ctx, t, dir, history, s)
	return r
}

// struck fails the test unless the fault ran: a window was recorded.
func struck(t *testing.T, r results.Run) *results.Window {
	t.Helper()
	w := r.Summary.FaultWindow
	if w == nil || w.EndNs <= w.StartNs {
		t.Fatalf("fault window = %+v; want the fault to have struck and ended", w)
	}
	return w
}

// cycles counts the lock cycles completed in the one-second intervals that
// lie wholly before, inside and after the window.
func cycles(r results.Run, w *results.Window) (before, during, after int64) {
	for _, iv := range r.Intervals {
		c := iv.Hists[results.Critical].TotalCount()
		switch {
		case iv.EndNs <= w.StartNs:
			before += c
		case iv.StartNs >= w.StartNs && iv.EndNs <= w.EndNs:
			during += c
		case iv.StartNs >= w.EndNs:
			after += c
		}
	}
	return before, during, after
}
