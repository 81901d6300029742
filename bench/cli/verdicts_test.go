package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/lockbench/lockbench/results"
)

// verdictsTimeout bounds each restricted verdict table below.
const verdictsTimeout = 55 * time.Second

// `lockbench verdicts`, restricted to setnx and fencing without a fault and
// under pause, prints the table and writes verdicts.json (one object per
// strategy × fault × fencing) and verdicts.md: setnx loses safety under the
// pause, fencing with the store's check on does not (its stale write is
// rejected). Run twice with the same seed, every cell gets the same
// verdict: the strikes are designed, and the seed fixes the payments.
func TestVerdicts(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Redis node and instance processes; skipped with -short")
	}
	want := []struct {
		id     string
		unsafe bool
	}{
		{"nolock/none/off", true},
		{"setnx/none/off", false},
		{"fencing/none/off", false},
		{"fencing/none/on", false},
		{"setnx/pause/off", true},
		{"fencing/pause/off", true},
		{"fencing/pause/on", false},
	}
	var verdicts [2]map[string]bool
	for run := range verdicts {
		byID := runVerdictsOnce(t, run)
		if len(byID) != len(want) {
			t.Errorf("run %d: verdicts.json has %d objects; want %d (strategy × fault × fencing)", run+1, len(byID), len(want))
		}
		verdicts[run] = map[string]bool{}
		for _, w := range want {
			s, ok := byID[w.id]
			if !ok {
				t.Errorf("run %d: verdicts.json has no %s", run+1, w.id)
				continue
			}
			verdicts[run][w.id] = s.Unsafe
			if s.Unsafe != w.unsafe {
				t.Errorf("run %d: %s: unsafe = %v (duplicates %d, overlaps %d, stale rejected %d); want %v", run+1, w.id, s.Unsafe, s.Duplicates, s.Overlaps, s.StaleRejected, w.unsafe)
			}
		}
		if s := byID["fencing/pause/on"]; s.StaleRejected == 0 {
			t.Errorf("run %d: fencing/pause/on: stale rejected = 0; want the resumed holder's write rejected", run+1)
		}
		if s := byID["setnx/pause/off"]; s.Duplicates == 0 || s.FaultWindow == nil {
			t.Errorf("run %d: setnx/pause/off: duplicates %d, window %v; want duplicates and a fault window", run+1, s.Duplicates, s.FaultWindow)
		}
	}
	if !reflect.DeepEqual(verdicts[0], verdicts[1]) {
		t.Errorf("same seed, different verdicts:\nfirst  %v\nsecond %v", verdicts[0], verdicts[1])
	}
}

// runVerdictsOnce runs the restricted verdict table (seed 3) and returns
// verdicts.json by strategy/fault/fencing, checking the printed table
// and verdicts.md on the way.
func runVerdictsOnce(t *testing.T, run int) map[string]results.Summary {
	t.Helper()
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), verdictsTimeout)
	defer cancel()
	var out, errb bytes.Buffer
	began := time.Now()
	err := Run(ctx, []string{"verdicts", "--strategy", "nolock,setnx,fencing", "--fault", "none,pause", "--seed", "3", "--history", "--out", dir}, &out, &errb)
	t.Logf("verdicts (run %d) in %s:\n%s\nstderr:\n%s", run+1, time.Since(began).Round(time.Millisecond), out.String(), errb.String())
	if err != nil {
		t.Fatalf("verdicts: %v", err)
	}
	if ctx.Err() != nil {
		t.Fatalf("verdicts did not finish within %s", verdictsTimeout)
	}
	checkAgrees(t, dir, "lockbench_acct")
	return readVerdicts(t, dir, &out)
}

// checkAgrees runs the second judge, `lockbench check`, over dir: it must
// agree with summary.json on every run, and have drawn the exclusion
// violation of at least one key (a visualisation whose name has key).
func checkAgrees(t *testing.T, dir, key string) {
	t.Helper()
	var out, errb bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), verdictsTimeout)
	defer cancel()
	if err := Run(ctx, []string{"check", dir}, &out, &errb); err != nil {
		t.Errorf("check: %v (exit %d)\n%s%s", err, ExitCode(err, io.Discard), out.String(), errb.String())
	}
	if strings.Contains(out.String(), "DISAGREE") || !strings.Contains(out.String(), "agree  ") {
		t.Errorf("check:\n%s", out.String())
	}
	if html, _ := filepath.Glob(filepath.Join(dir, results.HistoryDir, "*"+key+"*.exclusion.html")); len(html) == 0 {
		t.Errorf("check drew no exclusion violation; want the unsafe cells' keys drawn:\n%s", out.String())
	}
}

// readVerdicts reads dir's verdicts.json by strategy/fault/fencing,
// checking the printed table (out) and verdicts.md on the way.
func readVerdicts(t *testing.T, dir string, out *bytes.Buffer) map[string]results.Summary {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, results.VerdictsFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := results.ReadJSON(f)
	if err != nil {
		t.Fatalf("verdicts.json: %v", err)
	}
	byID := map[string]results.Summary{}
	for _, s := range got {
		if s.Params.Seed != 3 || s.Trial != 1 {
			t.Errorf("%s: seed %d, trial %d; want seed 3, trial 1", s.String(), s.Params.Seed, s.Trial)
		}
		byID[s.Strategy+"/"+s.Fault+"/"+onOff(s.Fencing)] = s
	}
	md, err := os.ReadFile(filepath.Join(dir, VerdictsMarkdownFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"| setnx", "| fencing", "**UNSAFE**", "| pause"} {
		if !strings.Contains(string(md), w) {
			t.Errorf("verdicts.md lacks %q:\n%s", w, md)
		}
		if !strings.Contains(out.String(), w) {
			t.Errorf("the printed table lacks %q", w)
		}
	}
	return byID
}

// Bad lists are usage errors (exit 2), found before any server starts.
func TestVerdictsUsage(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"verdicts", "--fault", "meteor"}, "--fault"},
		{[]string{"verdicts", "--strategy", "meteor-lock"}, "--strategy"},
		// No fault of the list applies: nolock has no server to kill.
		{[]string{"verdicts", "--strategy", "nolock", "--fault", "kill-node"}, "--fault"},
	}
	for _, tc := range cases {
		var out, errb bytes.Buffer
		err := Run(context.Background(), tc.args, &out, &errb)
		if code := ExitCode(err, &errb); code != 2 || !strings.Contains(errb.String(), tc.want) {
			t.Errorf("%v: exit %d, %q; want exit 2 naming %s", tc.args, code, errb.String(), tc.want)
		}
	}
}

// The table's cells: each fault × the strategies it applies to, strategies
// with fencing tokens twice (the store's check off, then on), and the
// scenario each fault needs.
func TestVerdictCases(t *testing.T) {
	cases, err := verdictCases(mustInfos("nolock", "mutex", "setnx", "etcd", "pg-unique"), []string{"none", "pause", "kill-node", "clock-jump"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range cases {
		got = append(got, fmt.Sprintf("%s %s %s instances=%d", c.label(), c.sc.InstanceMode, c.sc.Store, c.sc.Instances))
	}
	want := []string{
		// In-process locks also run on one instance (the monolith).
		"nolock × none (fencing off) goroutine memory instances=2",
		"nolock [instances=1] × none (fencing off) goroutine memory instances=1",
		"mutex × none (fencing off) goroutine memory instances=2",
		"mutex [instances=1] × none (fencing off) goroutine memory instances=1",
		"setnx × none (fencing off) goroutine memory instances=2",
		"etcd × none (fencing off) goroutine memory instances=2",
		"etcd × none (fencing on) goroutine memory instances=2",
		// pg-unique runs on the Postgres store, its only protection.
		"pg-unique × none (fencing off) goroutine postgres instances=2",
		"setnx × pause (fencing off) process memory instances=2",
		"etcd × pause (fencing off) process memory instances=2",
		"etcd × pause (fencing on) process memory instances=2",
		"pg-unique × pause (fencing off) process postgres instances=2",
		// kill-node of Postgres would kill pg-unique's store: not applied.
		"setnx × kill-node (fencing off) goroutine memory instances=2",
		"etcd × kill-node (fencing off) goroutine memory instances=2",
		"etcd × kill-node (fencing on) goroutine memory instances=2",
		"setnx × clock-jump (fencing off) goroutine memory instances=2",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("cells:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// The variants stand beside their cells: a fenced strategy's cell with the
// store's check on gets a strict twin; with --redis-wait, every
// single-node Redis cell gets a WAIT twin (strict ones too), and
// multi-node or non-Redis cells none; with --pg-sync on, every Postgres
// cell gets a synchronous-standby twin (strict ones too), and no other.
func TestVariantCases(t *testing.T) {
	for _, tc := range []struct {
		names  []string
		fault  string
		wait   int
		pgSync bool
		want   []string
	}{
		{[]string{"setnx", "fencing", "redlock", "etcd"}, "kill-node", 1, false, []string{
			"setnx × kill-node (fencing off)",
			"setnx [wait=1] × kill-node (fencing off)",
			"fencing × kill-node (fencing off)",
			"fencing [wait=1] × kill-node (fencing off)",
			"fencing × kill-node (fencing on)",
			"fencing [fencing=strict] × kill-node (fencing on)",
			"fencing [wait=1] × kill-node (fencing on)",
			"fencing [wait=1,fencing=strict] × kill-node (fencing on)",
			"redlock × kill-node (fencing off)",
			"etcd × kill-node (fencing off)",
			"etcd × kill-node (fencing on)",
			"etcd [fencing=strict] × kill-node (fencing on)",
		}},
		{[]string{"pg-advisory", "pg-onconflict", "setnx"}, "failover", 0, true, []string{
			"pg-advisory × failover (fencing off)",
			"pg-advisory [sync=on] × failover (fencing off)",
			"pg-onconflict × failover (fencing off)",
			"pg-onconflict [sync=on] × failover (fencing off)",
			"pg-onconflict × failover (fencing on)",
			"pg-onconflict [fencing=strict] × failover (fencing on)",
			"pg-onconflict [sync=on] × failover (fencing on)",
			"pg-onconflict [sync=on,fencing=strict] × failover (fencing on)",
			"setnx × failover (fencing off)",
		}},
	} {
		base, err := verdictCases(mustInfos(tc.names...), []string{tc.fault})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, c := range variantCases(base, tc.wait, tc.pgSync) {
			got = append(got, c.label())
		}
		if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
			t.Errorf("cells:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
		}
	}
}

// The window table shares each interval's lock cycles out by its overlap
// with the spans before, during and after the fault window, read back
// from the run directory.
func TestWindowTable(t *testing.T) {
	iv := func(startS, endS float64, cycles int) results.Interval {
		h := results.NewPhaseSet()
		for range cycles {
			_ = h[results.Critical].RecordValue(int64(time.Millisecond))
		}
		return results.Interval{StartNs: int64(startS * 1e9), EndNs: int64(endS * 1e9), Hists: h}
	}
	r := results.Run{
		Summary: results.Summary{Strategy: "setnx", Fault: "kill-node", FaultWindow: &results.Window{StartNs: 1e9, EndNs: 2.5e9}},
		// 100/s before, nothing in [1s, 2s), 100/s after 3s; the interval
		// straddling the window's end (2.5s) has 50 cycles, shared half
		// and half.
		Intervals: []results.Interval{iv(0, 1, 100), iv(1, 2, 0), iv(2, 3, 50), iv(3, 4, 100)},
	}
	// Through the run directory, as verdicts reads the intervals back.
	d := &runDir{dir: t.TempDir()}
	if err := d.add(r); err != nil {
		t.Fatal(err)
	}
	rates, err := d.windowRates(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := windowTable(&b, d.summaries(), rates); err != nil {
		t.Fatal(err)
	}
	fields := strings.Fields(strings.Split(strings.TrimSpace(b.String()), "\n")[3])
	got := strings.Join(fields[len(fields)-3:], " ")
	// during: 25 of the straddling interval's cycles over 1.5s ≈ 17/s;
	// after: 25 + 100 over 1.5s ≈ 83/s.
	if want := "100 17 83"; got != want {
		t.Errorf("before/during/after = %q; want %q\n%s", got, want, b.String())
	}
}
