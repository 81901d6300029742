package loadgen

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockbench/lockbench/check"
	"github.com/lockbench/lockbench/loadgen/store"
	"github.com/lockbench/lockbench/results"
	"github.com/lockbench/lockbench/strategies"
)

// Planted bugs: each test runs a small in-process load through a bug
// planted on purpose (in a lock strategy, in a worker's writes, or in the
// store's own count), and both judges must see it: the store (the run's
// Summary) and the second judge, check.Dir, re-deriving the counts from
// the run's history. A bug that either judge misses would make its
// verdicts worthless; a case where the two disagree is a bug in one of
// them or in the recording.

// plantedTimeout bounds each planted run and its check.
const plantedTimeout = 60 * time.Second

// plantedScenario is a small contended scenario: a few hundred payments
// over few accounts, with work in the critical section, in-process
// instances and the memory store.
func plantedScenario(mut func(*Scenario)) Scenario {
	sc := DefaultScenario()
	sc.Name = "planted"
	sc.Payments = 300
	sc.Accounts = 4
	sc.Instances, sc.Workers = 3, 4
	sc.Hold, _ = ParseHold("1ms")
	sc.InstanceMode = InstanceGoroutine
	sc.Store = StoreMemory
	if mut != nil {
		mut(&sc)
	}
	return sc
}

// plantedResult is a planted run and what the second judge made of it.
type plantedResult struct {
	sum    results.Summary
	id     string
	dir    string
	rep    check.Report
	run    check.RunReport
	output string // check.Dir's lines
}

// plantedID is the ID the run of o will have (results.Summary.ID), which
// names its history: no fault, trial 1.
func plantedID(o Options) string {
	s := results.Summary{Strategy: o.Strategy.Name, Scenario: o.Scenario.Name, Fault: "none",
		Variant: o.Scenario.Variant, Fencing: o.Scenario.Fencing && o.Strategy.Fencing}
	return s.ID()
}

// runPlanted runs o with its history in a fresh run directory, writes the
// run's summary.json there as the CLI does, and runs check.Dir over it.
func runPlanted(t *testing.T, o Options) plantedResult {
	t.Helper()
	dir := t.TempDir()
	id := plantedID(o)
	hf, err := NewHistoryFile(check.HistoryPath(dir, id))
	if err != nil {
		t.Fatal(err)
	}
	o.History, o.Reporter = true, Tee(o.Reporter, hf)
	ctx, cancel := context.WithTimeout(context.Background(), plantedTimeout)
	defer cancel()
	r, err := Run(ctx, o)
	err = errors.Join(err, hf.Close())
	if err != nil {
		t.Fatalf("run %s: %v", id, err)
	}
	if ctx.Err() != nil || r.Summary.Interrupted {
		t.Fatalf("run %s did not finish within %s", id, plantedTimeout)
	}
	s := r.Summary
	if got := s.ID(); got != id {
		t.Fatalf("the run's ID is %s; its history was named %s", got, id)
	}
	var buf bytes.Buffer
	if err := results.WriteJSON(&buf, []results.Summary{s}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, results.SummaryJSONFile), buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	rep, err := check.Dir(ctx, dir, check.Options{}, &out)
	if err != nil {
		t.Fatalf("check %s: %v\n%s", id, err, out.String())
	}
	if len(rep.Runs) != 1 || rep.Runs[0].ID != id || rep.Runs[0].History == "" {
		t.Fatalf("check %s: want one run, %s, with its history; got %+v\n%s", id, id, rep.Runs, out.String())
	}
	t.Logf("%s: payments %d processed %d dup %d lost %d lostupd %d overlaps %d stale_acc %d unsafe %v\n%s",
		id, s.Payments, s.Processed, s.Duplicates, s.Lost, s.LostUpdates, s.Overlaps, s.StaleAccepted, s.Unsafe, out.String())
	return plantedResult{sum: s, id: id, dir: dir, rep: rep, run: rep.Runs[0], output: out.String()}
}

// agree fails t unless the second judge agreed with the store on every
// count of the run.
func (p plantedResult) agree(t *testing.T) {
	t.Helper()
	if n := p.rep.Disagreements(); n > 0 || !strings.Contains(p.output, "agree  "+p.id) {
		t.Errorf("%s: check found %d disagreements with the store; want none:\n%s", p.id, n, p.output)
	}
	// The derived counts are the store's (the same as "agree", said
	// field by field, so that a failure names the field).
	c, s := p.run.Counts, p.sum
	for _, f := range []struct {
		name          string
		history, stor int64
	}{
		{"processed", c.Processed, s.Processed},
		{"duplicates", c.Duplicates, s.Duplicates},
		{"lost", c.Lost, s.Lost},
		{"lost_updates", c.LostUpdates, s.LostUpdates},
		{"overlaps", c.Overlaps, s.Overlaps},
		{"stale_accepted", c.StaleAccepted, s.StaleAccepted},
		{"overdrafts", c.Overdrafts, s.Overdrafts},
	} {
		if f.history != f.stor {
			t.Errorf("%s: %s: history %d, store %d", p.id, f.name, f.history, f.stor)
		}
	}
}

// violated returns the keys the exclusion check found held by two
// workers at once.
func (p plantedResult) violated() []string {
	var keys []string
	for _, r := range p.run.Exclusion.Results {
		if r.Outcome == check.KeyViolated {
			keys = append(keys, r.Key)
		}
	}
	return keys
}

// wantViolated fails t unless the exclusion check found some key
// violated, and every key where the store counted an overlap violated
// (or left undecided by a limit, which the output names).
func (p plantedResult) wantViolated(t *testing.T) {
	t.Helper()
	ex := p.run.Exclusion
	if ex.Skipped != "" {
		t.Fatalf("%s: exclusion check skipped: %s", p.id, ex.Skipped)
	}
	if len(p.violated()) == 0 {
		t.Errorf("%s: no key found violated; want the planted bug's two holders at once caught:\n%s", p.id, p.output)
	}
	for _, r := range ex.Results {
		if r.StoreOverlap && r.Outcome == check.KeyOK {
			t.Errorf("%s: key %s: the store counted an overlap, porcupine found it exclusive", p.id, r.Key)
		}
	}
}

// earlyRelease is a lock that releases before the work ends: a real
// sync.Mutex per key, shared by every instance of the run (so that,
// without the bug, it would exclude every holder), which Acquire locks
// and unlocks at once. Its lease's Release does nothing. With fixed (the
// control without the bug), the lease holds the mutex until Release.
type earlyRelease struct {
	mu    sync.Mutex
	keys  map[string]*sync.Mutex
	fixed bool
}

func (e *earlyRelease) Acquire(ctx context.Context, key string) (strategies.Lease, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	e.mu.Lock()
	m, ok := e.keys[key]
	if !ok {
		m = &sync.Mutex{}
		e.keys[key] = m
	}
	e.mu.Unlock()
	m.Lock()
	if e.fixed {
		return &mutexLease{key: key, m: m}, nil
	}
	m.Unlock() // the planted bug: the lock is given up before the work
	return plantedLease(key), nil
}

// mutexLease holds its key's mutex until Release.
type mutexLease struct {
	key  string
	m    *sync.Mutex
	once sync.Once
}

func (l *mutexLease) Key() string       { return l.key }
func (*mutexLease) Token() int64        { return 0 }
func (*mutexLease) Deadline() time.Time { return time.Time{} }
func (l *mutexLease) Release(context.Context) error {
	released := false
	l.once.Do(func() { l.m.Unlock(); released = true })
	if !released {
		return strategies.ErrNotOwner
	}
	return nil
}

func (*earlyRelease) Close() error { return nil }

// plantedLease is a lease with no token whose Release does nothing.
type plantedLease string

func (l plantedLease) Key() string                 { return string(l) }
func (plantedLease) Token() int64                  { return 0 }
func (plantedLease) Deadline() time.Time           { return time.Time{} }
func (plantedLease) Release(context.Context) error { return nil }

// sharedInfo is a test strategy's registry entry whose every instance
// gets s, the one lock of the run.
func sharedInfo(name string, s strategies.Strategy) strategies.Info {
	return strategies.Info{
		Name:           name,
		Description:    "test: a planted bug",
		CrossProcess:   true,
		KeepsNoContext: true,
		New: func(context.Context, strategies.Config) (strategies.Strategy, error) {
			return s, nil
		},
	}
}

// A lock that releases as soon as it is taken lets the workers of every
// instance into the critical section together: the store counts the
// overlaps and the payments applied twice, and check agrees with every
// count and finds the keys held by two workers at once.
func TestPlantedEarlyRelease(t *testing.T) {
	o := Options{
		Strategy: sharedInfo("test-early-release", &earlyRelease{keys: map[string]*sync.Mutex{}}),
		Scenario: plantedScenario(nil),
		Store:    store.NewMemory(),
	}
	p := runPlanted(t, o)
	s := p.sum
	if !s.Unsafe || s.Overlaps == 0 || s.Duplicates == 0 {
		t.Errorf("early release: unsafe %v, overlaps %d, duplicates %d; want unsafe with overlaps and duplicates", s.Unsafe, s.Overlaps, s.Duplicates)
	}
	p.agree(t)
	p.wantViolated(t)
}

// doubleWrite is the memory store behind a worker that sends its write
// twice: each write the store applies is followed, inside the same
// critical section, by a second Enter and Finish of the same payment that
// writes it again, as if the payment had not been processed. Everything
// goes through the real store. Its Reset tells the store that payments
// have no bound on their critical sections (Setup.Deliveries 0), since
// each has one more than its deliveries.
type doubleWrite struct {
	*store.Memory
	mu sync.Mutex
	// enters are the Enters in flight by key and entry number, for the
	// second Enter's instance and worker.
	enters map[plantedEntry]store.EnterReq
}

type plantedEntry struct {
	key   string
	entry int64
}

func newDoubleWrite() *doubleWrite {
	return &doubleWrite{Memory: store.NewMemory(), enters: map[plantedEntry]store.EnterReq{}}
}

func (d *doubleWrite) Reset(ctx context.Context, s store.Setup) error {
	s.Deliveries = 0
	return d.Memory.Reset(ctx, s)
}

func (d *doubleWrite) Enter(ctx context.Context, r store.EnterReq) (store.EnterResp, error) {
	resp, err := d.Memory.Enter(ctx, r)
	if err == nil {
		d.mu.Lock()
		d.enters[plantedEntry{r.LockKey, resp.Entry}] = r
		d.mu.Unlock()
	}
	return resp, err
}

func (d *doubleWrite) Finish(ctx context.Context, r store.FinishReq) (store.FinishResp, error) {
	d.mu.Lock()
	er, ok := d.enters[plantedEntry{r.LockKey, r.Entry}]
	delete(d.enters, plantedEntry{r.LockKey, r.Entry})
	d.mu.Unlock()
	resp, err := d.Memory.Finish(ctx, r)
	if err != nil || !r.Apply || !resp.Applied || !ok {
		return resp, err
	}
	// The planted bug: write it again.
	read, err := d.Memory.Enter(ctx, er)
	if err != nil {
		return resp, err
	}
	read.Processed = false // the second write ignores that it was
	// The same debit again (0 for a payment declined for funds), from
	// the current record: declined if the balance no longer covers it.
	again := store.WriteFor(store.FinishReq{LockKey: r.LockKey, Token: r.Token, Payment: r.Payment, Account: r.Account}, read, r.Debit)
	if _, err := d.Memory.Finish(ctx, again); err != nil {
		return resp, err
	}
	return resp, nil
}

var _ store.Historian = (*doubleWrite)(nil)
var _ store.Offerer = (*doubleWrite)(nil)

// A worker that sends its write twice, under a lock that works (mutex,
// one instance): no overlap, no lost update, but every payment applied
// twice. The store counts a duplicate per payment, and check agrees and
// finds every key exclusive.
func TestPlantedDoubleWrite(t *testing.T) {
	o := Options{
		Strategy: strategies.MustLookup("mutex"),
		Scenario: plantedScenario(func(s *Scenario) { s.Instances, s.Deliveries = 1, 1 }),
		Store:    newDoubleWrite(),
	}
	p := runPlanted(t, o)
	s := p.sum
	if !s.Unsafe || s.Duplicates == 0 || s.Duplicates != s.Processed || s.Processed != s.Payments {
		t.Errorf("double write: unsafe %v, duplicates %d, processed %d of %d; want unsafe, every payment processed and applied twice", s.Unsafe, s.Duplicates, s.Processed, s.Payments)
	}
	if s.Overlaps != 0 || s.LostUpdates != 0 || s.Lost != 0 || s.StaleAccepted != 0 {
		t.Errorf("double write under a working lock: overlaps %d, lost updates %d, lost %d, stale accepted %d; want none", s.Overlaps, s.LostUpdates, s.Lost, s.StaleAccepted)
	}
	p.agree(t)
	if v := p.violated(); len(v) > 0 {
		t.Errorf("mutex on one instance: keys %v found violated; want none", v)
	}
}

// twoAtOnce is a lock that lets two holders in at once: a semaphore of
// two per key, shared by every instance. With fixed (the control without
// the bug), it has room for one.
type twoAtOnce struct {
	mu    sync.Mutex
	keys  map[string]chan struct{}
	fixed bool
}

func (*twoAtOnce) Blocks() bool { return true }

func (s *twoAtOnce) Acquire(ctx context.Context, key string) (strategies.Lease, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	slots, ok := s.keys[key]
	if !ok {
		room := 2 // the planted bug: room for two
		if s.fixed {
			room = 1
		}
		slots = make(chan struct{}, room)
		s.keys[key] = slots
	}
	s.mu.Unlock()
	select {
	case slots <- struct{}{}:
		return &semLease{key: key, slots: slots}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (*twoAtOnce) Close() error { return nil }

type semLease struct {
	key   string
	slots chan struct{}
	once  sync.Once
}

func (l *semLease) Key() string       { return l.key }
func (*semLease) Token() int64        { return 0 }
func (*semLease) Deadline() time.Time { return time.Time{} }
func (l *semLease) Release(context.Context) error {
	released := false
	l.once.Do(func() { <-l.slots; released = true })
	if !released {
		return strategies.ErrNotOwner
	}
	return nil
}

// A lock that lets two holders in at once, in account mode with work in
// the critical section and one delivery a payment: two holders read the
// same version of an account and the second write overwrites the first.
// The store counts lost updates (and no duplicate: each payment is
// delivered once), and check agrees and finds the keys violated.
func TestPlantedLostUpdate(t *testing.T) {
	o := Options{
		Strategy: sharedInfo("test-two-at-once", &twoAtOnce{keys: map[string]chan struct{}{}}),
		Scenario: plantedScenario(func(s *Scenario) { s.Deliveries, s.Instances, s.Accounts = 1, 2, 2 }),
		Store:    store.NewMemory(),
	}
	p := runPlanted(t, o)
	s := p.sum
	if !s.Unsafe || s.LostUpdates == 0 || s.Lost == 0 || s.Overlaps == 0 {
		t.Errorf("two at once: unsafe %v, lost updates %d, lost %d, overlaps %d; want unsafe with lost updates, lost payments and overlaps", s.Unsafe, s.LostUpdates, s.Lost, s.Overlaps)
	}
	if s.Duplicates != 0 {
		t.Errorf("two at once, one delivery a payment: duplicates %d; want 0", s.Duplicates)
	}
	p.agree(t)
	p.wantViolated(t)
}

// missOne is the memory store planted to miss one duplicate: its Counts
// say one duplicate less than it found.
type missOne struct{ *store.Memory }

func (m missOne) Counts(ctx context.Context) (store.Counts, error) {
	c, err := m.Memory.Counts(ctx)
	if c.Duplicates > 0 {
		c.Duplicates--
	}
	return c, err
}

// A store that misses one duplicate writes a summary.json one short; the
// second judge must say so: a disagreement on duplicates, naming the run,
// with the history's count one above the row's.
func TestPlantedStoreMissesDuplicate(t *testing.T) {
	o := Options{
		Strategy: strategies.MustLookup("nolock"),
		Scenario: plantedScenario(nil),
		Store:    missOne{store.NewMemory()},
	}
	p := runPlanted(t, o)
	if p.run.Counts.Duplicates == 0 {
		t.Fatalf("nolock, two deliveries: the history has no duplicate; the planted miss has nothing to hide:\n%s", p.output)
	}
	var dup []check.Disagreement
	for _, d := range p.run.Disagreements {
		if d.Field == "duplicates" {
			dup = append(dup, d)
		} else {
			t.Errorf("%s: disagreement on %s (%s); want only duplicates", p.id, d.Field, d)
		}
	}
	if len(dup) != 1 {
		t.Fatalf("%s: %d disagreements on duplicates; want 1:\n%s", p.id, len(dup), p.output)
	}
	d := dup[0]
	if d.File != results.SummaryJSONFile || d.History != d.Row+1 || d.Row != p.sum.Duplicates {
		t.Errorf("%s: %+v; want summary.json's %d, the history's one more", p.id, d, p.sum.Duplicates)
	}
	if p.rep.Disagreements() != 1 {
		t.Errorf("report: %d disagreements; want 1", p.rep.Disagreements())
	}
	want := fmt.Sprintf("DISAGREE %s: duplicates history %d, summary.json %d", p.id, d.History, d.Row)
	if !strings.Contains(p.output, want) {
		t.Errorf("check's output lacks %q:\n%s", want, p.output)
	}
}

// The control, nolock, is caught by both judges on every seed: every run
// unsafe at the store, check agreeing on every count and finding keys
// held by two workers at once.
func TestPlantedNoLockEverySeed(t *testing.T) {
	for seed := int64(1); seed <= 5; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			o := Options{
				Strategy: strategies.MustLookup("nolock"),
				Scenario: plantedScenario(func(s *Scenario) { s.Seed = seed }),
				Store:    store.NewMemory(),
			}
			p := runPlanted(t, o)
			if s := p.sum; !s.Unsafe {
				t.Errorf("nolock seed %d: safe (duplicates %d, lost updates %d, overlaps %d); want unsafe", seed, s.Duplicates, s.LostUpdates, s.Overlaps)
			}
			p.agree(t)
			p.wantViolated(t)
		})
	}
}

// The controls of the planted bugs: the same runs with each bug taken
// out are safe at the store, check agrees, and every key is exclusive.
// So what the tests above catch is the planted bug, not the test's own
// strategy, store wrapper or scenario.
func TestPlantedBugsFixed(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    Options
	}{
		{"early release fixed", Options{
			Strategy: sharedInfo("test-early-release-fixed", &earlyRelease{keys: map[string]*sync.Mutex{}, fixed: true}),
			Scenario: plantedScenario(nil),
			Store:    store.NewMemory(),
		}},
		{"single write", Options{
			Strategy: strategies.MustLookup("mutex"),
			Scenario: plantedScenario(func(s *Scenario) { s.Instances, s.Deliveries = 1, 1 }),
			Store:    store.NewMemory(),
		}},
		{"one at once", Options{
			Strategy: sharedInfo("test-one-at-once", &twoAtOnce{keys: map[string]chan struct{}{}, fixed: true}),
			Scenario: plantedScenario(func(s *Scenario) { s.Deliveries, s.Instances, s.Accounts = 1, 2, 2 }),
			Store:    store.NewMemory(),
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := runPlanted(t, tc.o)
			if s := p.sum; s.Unsafe || s.Overlaps != 0 || s.Processed != s.Payments {
				t.Errorf("%s: unsafe %v, overlaps %d, processed %d of %d; want safe, no overlap, every payment processed", tc.name, s.Unsafe, s.Overlaps, s.Processed, s.Payments)
			}
			p.agree(t)
			if v := p.violated(); len(v) > 0 {
				t.Errorf("%s: keys %v found violated; want none", tc.name, v)
			}
			for _, r := range p.run.Exclusion.Results {
				if r.Outcome != check.KeyOK {
					t.Errorf("%s: key %s: %s; want ok", tc.name, r.Key, r.Outcome)
				}
			}
		})
	}
}
