package check

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const acct0 = "lockbench:acct:0"

// TestCleanLock: two workers take one key in turn, each debiting once.
func TestCleanLock(t *testing.T) {
	h := newHist("lock", "fencing", "account", true, false, []int64{1000}, 0)
	h.offer(1, 0, 100)
	h.offer(2, 0, 100)
	h.hold(0, 0, acct0, 1, 0, 100, 1, 0, 1000, 100)
	h.hold(0, 1, acct0, 2, 0, 200, 2, 1, 900, 100)
	r := &testRun{strategy: "fencing", fencing: true, hist: h}
	rr, out := checkOne(t, r, Counts{Processed: 2})
	want := "agree  fencing.contended.none.fenced\n  exclusion: ok, 1 key\n"
	if out != want {
		t.Errorf("got output\n%s; want\n%s", out, want)
	}
	if got := rr.Exclusion.Results; len(got) != 1 || got[0].Outcome != KeyOK || got[0].Checked != 4 {
		t.Errorf("got exclusion %+v; want one key ok on 4 operations", got)
	}
}

// superseded records a holder (0,0) of p1 whose lease expired inside
// its critical section; (0,1) took the key, entered, wrote p2 and
// released before (0,0) wrote from the version it read.
func superseded() *hist {
	h := newHist("lock", "setnx", "account", false, false, []int64{1000}, 0)
	h.offer(1, 0, 100)
	h.offer(2, 0, 100)
	h.acquire(0, 0, acct0, 10, 20, true, 0)
	a := h.enter(0, 0, acct0, 1, 0, 30, 0, 0, 1000)
	h.acquire(0, 1, acct0, 100, 110, true, 0)
	b := h.enter(0, 1, acct0, 2, 0, 120, 0, 0, 1000)
	h.finish(acct0, b, 2, 0, 130, 0, applied(0, 100, 900, 1))
	h.release(0, 1, acct0, 140, 150, true)
	h.finish(acct0, a, 1, 0, 200, 0, applied(0, 100, 900, 2))
	h.release(0, 0, acct0, 210, 220, false)
	return h
}

// TestSuperseded: the superseded holder's write is accepted (no
// fencing), overwrites the other's, and porcupine finds two holders.
func TestSuperseded(t *testing.T) {
	r := &testRun{strategy: "setnx", hist: superseded()}
	rr, out := checkOne(t, r, Counts{
		Processed: 2, Lost: 1, LostUpdates: 1, StaleAccepted: 1,
		Overlaps: 1, OverlapNs: 10, OverlapMaxNs: 10,
	})
	if !strings.HasPrefix(out, "agree  setnx.contended.none.unfenced\n") {
		t.Errorf("got output\n%s; want agree first", out)
	}
	res := rr.Exclusion.Results
	if len(res) != 1 || res[0].Outcome != KeyViolated || !res[0].StoreOverlap {
		t.Fatalf("got exclusion %+v; want the key violated where the store saw an overlap", res)
	}
	if len(rr.Exclusion.Files) != 1 {
		t.Fatalf("got files %v; want 1 visualisation", rr.Exclusion.Files)
	}
	path := rr.Exclusion.Files[0]
	if want := "setnx.contended.none.unfenced.lockbench_acct_0.exclusion.html"; filepath.Base(path) != want {
		t.Errorf("got file %s; want %s", filepath.Base(path), want)
	}
	html, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"store i0 w0", "store i0 w1", "n=1", "n=2", "acquire i0 w1"} {
		if !bytes.Contains(html, []byte(want)) {
			t.Errorf("visualisation lacks %q", want)
		}
	}
	for _, want := range []string{"exclusion: 1 key checked: 1 violated", "exclusion: lockbench:acct:0 violated, where the store counted an overlap", "exclusion: wrote " + path} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// TestTokenRegressed: a token older than the key's newest, from a
// holder nobody superseded, is token_regressed, not stale: refused with
// fencing, applied without.
func TestTokenRegressed(t *testing.T) {
	for _, fencing := range []bool{true, false} {
		h := newHist("lock", "fencing", "account", fencing, false, []int64{1000}, 0)
		h.offer(1, 0, 100)
		h.offer(2, 0, 100)
		h.hold(0, 0, acct0, 1, 0, 100, 5, 0, 1000, 100)
		// The counter restarted: the next holder's token is 3.
		h.acquire(0, 1, acct0, 200, 210, true, 3)
		n := h.enter(0, 1, acct0, 2, 0, 220, 3, 1, 900)
		want := Counts{Processed: 1, Unprocessed: 1, TokenRegressed: 1}
		if fencing {
			h.finish(acct0, n, 2, 0, 230, 3, refused(1, 100, 800, "token_regressed"))
		} else {
			h.finish(acct0, n, 2, 0, 230, 3, applied(1, 100, 800, 2))
			want = Counts{Processed: 2, TokenRegressed: 1}
		}
		h.release(0, 1, acct0, 240, 250, true)
		checkOne(t, &testRun{strategy: "fencing", fencing: fencing, hist: h}, want)
	}
}

// TestLostUpdate: two holders of account 0 both read version 4 and both
// write from base 4; the second write drops the first.
func TestLostUpdate(t *testing.T) {
	for _, c := range []struct {
		name string
		// second is the payment of the holder that writes second.
		second int64
		want   Counts
	}{
		// Two payments: the first one written is lost.
		{"two payments", 6, Counts{Processed: 6, Lost: 1, LostUpdates: 1, StaleAccepted: 1, Overlaps: 1, OverlapNs: 10, OverlapMaxNs: 10}},
		// Two deliveries of one payment: a duplicate, whose overwritten
		// debit is a lost update but whose payment is not lost.
		{"one payment", 5, Counts{Processed: 5, Unprocessed: 1, Duplicates: 1, LostUpdates: 1, StaleAccepted: 1, Overlaps: 1, OverlapNs: 10, OverlapMaxNs: 10}},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHist("lock", "setnx", "account", false, false, []int64{1000}, 0)
			for p := int64(1); p <= 6; p++ {
				h.offer(p, 0, 100)
			}
			for p := int64(1); p <= 4; p++ {
				h.hold(0, 0, acct0, p, 0, p*100, 0, p-1, 1000-(p-1)*100, 100)
			}
			h.acquire(0, 0, acct0, 1000, 1010, true, 0)
			a := h.enter(0, 0, acct0, c.second, 0, 1020, 0, 4, 600)
			h.acquire(0, 1, acct0, 1030, 1040, true, 0)
			b := h.enter(0, 1, acct0, 5, 0, 1050, 0, 4, 600)
			h.finish(acct0, b, 5, 0, 1060, 0, applied(4, 100, 500, 5))
			h.release(0, 1, acct0, 1070, 1080, true)
			h.finish(acct0, a, c.second, 0, 1090, 0, applied(4, 100, 500, 6))
			h.release(0, 0, acct0, 1100, 1110, false)
			checkOne(t, &testRun{strategy: "setnx", hist: h}, c.want)
		})
	}
}

// TestDuplicate: in payment mode two deliveries of one payment each
// read it unprocessed, and both debits apply.
func TestDuplicate(t *testing.T) {
	h := newHist("lock", "setnx", "payment", false, false, []int64{1000}, 0)
	h.offer(1, 0, 100)
	h.hold(0, 0, "lockbench:pay:1", 1, 0, 100, 0, 0, 1000, 100)
	h.hold(0, 1, "lockbench:pay:1", 1, 0, 200, 0, 1, 900, 100)
	checkOne(t, &testRun{strategy: "setnx", hist: h}, Counts{Processed: 1, Duplicates: 1})
}

// TestDisagree: a row whose count is off by one disagrees on that
// field, named with its file; an identical row in verdicts.json is the
// same run, checked once.
func TestDisagree(t *testing.T) {
	r := &testRun{strategy: "setnx", hist: superseded(), counts: Counts{
		Processed: 2, Lost: 2, LostUpdates: 1, StaleAccepted: 1,
		Overlaps: 1, OverlapNs: 10, OverlapMaxNs: 10,
	}}
	dir := writeDir(t, r)
	writeJSON(t, filepath.Join(dir, "verdicts.json"), []map[string]any{r.row(t)})
	rep, out := runDir(t, dir, Options{})
	if len(rep.Runs) != 1 {
		t.Fatalf("got %d runs; want 1", len(rep.Runs))
	}
	if n := rep.Disagreements(); n != 2 {
		t.Errorf("got %d disagreements; want 2 (one per file)", n)
	}
	for _, want := range []string{
		"DISAGREE setnx.contended.none.unfenced: lost history 1, summary.json 2\n",
		"DISAGREE setnx.contended.none.unfenced: lost history 1, verdicts.json 2\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "agree ") {
		t.Errorf("output says agree:\n%s", out)
	}
}

// TestAppliedMismatch: a write the history says was applied, which the
// rules refuse, disagrees on applied, naming its key and seq.
func TestAppliedMismatch(t *testing.T) {
	h := newHist("lock", "fencing", "account", true, false, []int64{1000}, 0)
	h.offer(1, 0, 100)
	h.offer(2, 0, 100)
	h.hold(0, 0, acct0, 1, 0, 100, 5, 0, 1000, 100)
	h.acquire(0, 1, acct0, 200, 210, true, 3)
	n := h.enter(0, 1, acct0, 2, 0, 220, 3, 1, 900)
	h.finish(acct0, n, 2, 0, 230, 3, applied(1, 100, 800, 2))
	h.release(0, 1, acct0, 240, 250, true)
	r := &testRun{strategy: "fencing", fencing: true, hist: h, counts: Counts{Processed: 1, Unprocessed: 1, TokenRegressed: 1}}
	rep, out := runDir(t, writeDir(t, r), Options{})
	want := "DISAGREE fencing.contended.none.fenced: applied key lockbench:acct:0 seq 4: history applied, the rules refused (token_regressed)\n"
	if rep.Disagreements() != 1 || !strings.Contains(out, want) {
		t.Errorf("got %d disagreements, output\n%s; want 1: %s", rep.Disagreements(), out, want)
	}
}

// TestTransaction: a transactional run has no lock to check; its
// committed, claimed transactions are its applications.
func TestTransaction(t *testing.T) {
	h := newHist("transaction", "pg-unique", "account", false, false, []int64{1000}, 0)
	tx := func(w int, p int64, claimed bool, outcome string) {
		k := "lockbench:acct:0"
		n := h.enter(0, w, k, p, 0, 10, 0, 0, 0)
		h.finish(k, n, p, 0, 20, 0, nil)
		h.add(map[string]any{"ev": "tx", "i": 0, "w": w, "p": p, "a": 0, "k": k, "begin": 5, "claim": 15,
			"end": 25, "claimed": claimed, "debited": claimed, "outcome": outcome})
	}
	for p := int64(1); p <= 3; p++ {
		h.offer(p, 0, 100)
	}
	tx(0, 1, true, "commit")
	tx(1, 1, false, "commit")  // the second delivery found p1 claimed
	tx(0, 2, true, "rollback") // claimed, then rolled back: no application
	tx(1, 3, true, "commit")
	tx(2, 3, true, "rollback")
	rr, out := checkOne(t, &testRun{strategy: "pg-unique", hist: h}, Counts{Processed: 2, Unprocessed: 1})
	if want := "  exclusion: skipped, pg-unique runs each delivery as one database transaction: no lock holder to check (its counts are)\n"; !strings.Contains(out, want) {
		t.Errorf("output lacks %q:\n%s", want, out)
	}
	if rr.Exclusion.Skipped == "" {
		t.Error("exclusion not skipped")
	}
}

// TestTransactionConflicts: an optimistic transaction whose version check
// failed is rolled back, counts one conflict and applies nothing; the
// delivery's next try commits.
func TestTransactionConflicts(t *testing.T) {
	h := newHist("transaction", "pg-optimistic", "account", false, false, []int64{1000}, 0)
	k := "lockbench:acct:0"
	h.offer(1, 0, 100)
	for try, line := range []map[string]any{
		{"claimed": false, "debited": false, "outcome": "rollback", "conflict": true},
		{"claimed": false, "debited": false, "outcome": "rollback", "conflict": true},
		{"claimed": true, "debited": true, "outcome": "commit"},
	} {
		at := int64(100 * try)
		n := h.enter(0, 0, k, 1, 0, at+10, 0, 0, 0)
		h.finish(k, n, 1, 0, at+20, 0, nil)
		line["ev"], line["i"], line["w"], line["p"], line["a"], line["k"] = "tx", 0, 0, 1, 0, k
		line["begin"], line["claim"], line["end"] = at+5, at+15, at+25
		h.add(line)
	}
	checkOne(t, &testRun{strategy: "pg-optimistic", hist: h}, Counts{Processed: 1, Conflicts: 2})
}

// TestTransactionUnknownOutcome: a transaction whose COMMIT failed on the
// way may have committed: the row's counts agree anywhere between none and
// all of those committed, and not beyond.
func TestTransactionUnknownOutcome(t *testing.T) {
	mk := func() *hist {
		h := newHist("transaction", "pg-for-update", "account", false, false, []int64{1000}, 0)
		k := "lockbench:acct:0"
		for p := int64(1); p <= 3; p++ {
			h.offer(p, 0, 100)
		}
		for p, outcome := range map[int64]string{1: "commit", 2: "unknown"} {
			at := 100 * p
			n := h.enter(0, 0, k, p, 0, at+10, 0, 0, 0)
			h.finish(k, n, p, 0, at+20, 0, nil)
			h.add(map[string]any{"ev": "tx", "i": 0, "w": 0, "p": p, "a": 0, "k": k, "begin": at + 5, "claim": at + 15,
				"end": at + 25, "claimed": true, "debited": true, "outcome": outcome})
		}
		return h
	}
	for _, tc := range []struct {
		processed int64
		agree     bool
	}{{1, true}, {2, true}, {3, false}} {
		// The row's availability and verdict follow from its processed:
		// each end of the range agrees.
		r := &testRun{strategy: "pg-for-update", hist: mk(), counts: Counts{Processed: tc.processed, Unprocessed: max(3-tc.processed, 0)},
			extra: map[string]any{"availability": float64(tc.processed) / 3, "verdict": "safe", "unsafe": false}}
		rep, out := runDir(t, writeDir(t, r), Options{})
		if got := rep.Disagreements() == 0; got != tc.agree {
			t.Errorf("summary processed %d: agree %v; want %v\n%s", tc.processed, got, tc.agree, out)
		}
		if !strings.Contains(out, "1 transactions of unknown outcome") {
			t.Errorf("output lacks the note on the unknown outcome:\n%s", out)
		}
	}
}

// TestOverlapWindows: the window of exposure opens when a second holder
// enters and closes when the key is back to one holder; a third holder
// neither opens nor closes it, and a window that closes before it opened
// (the store's times) counts 0.
func TestOverlapWindows(t *testing.T) {
	h := newHist("lock", "nolock", "account", false, false, []int64{1000}, 0)
	k1, k2 := "lockbench:acct:0", "lockbench:acct:1"
	a := h.enter(0, 0, k1, 1, 0, 100, 0, 0, 1000)
	b := h.enter(0, 1, k1, 1, 0, 150, 0, 0, 1000) // overlap; opens at 150
	c := h.enter(0, 2, k1, 1, 0, 160, 0, 0, 1000) // overlap; 3 inside
	h.finish(k1, a, 1, 0, 170, 0, nil)            // 2 inside
	h.finish(k1, b, 1, 0, 200, 0, nil)            // 1 inside: 200-150 = 50
	d := h.enter(0, 3, k1, 1, 0, 300, 0, 0, 1000) // overlap; opens at 300
	h.finish(k1, c, 1, 0, 380, 0, nil)            // 380-300 = 80
	h.finish(k1, d, 1, 0, 400, 0, nil)
	e := h.enter(0, 0, k1, 1, 0, 500, 0, 0, 1000)
	f := h.enter(0, 1, k1, 1, 0, 520, 0, 0, 1000) // overlap; opens at 520
	h.finish(k1, e, 1, 0, 510, 0, nil)            // 510-520 < 0: 0
	h.finish(k1, f, 1, 0, 530, 0, nil)
	g := h.enter(1, 0, k2, 2, 1, 1000, 0, 0, 1000)
	i := h.enter(1, 1, k2, 2, 1, 1010, 0, 0, 1000) // overlap; opens at 1010
	h.finish(k2, i, 2, 1, 1100, 0, nil)            // 90, the longest
	h.finish(k2, g, 2, 1, 1200, 0, nil)
	// The history has no acquire: each enter contradicts it.
	r := &testRun{strategy: "nolock", hist: h, counts: Counts{Overlaps: 5, OverlapNs: 220, OverlapMaxNs: 90}}
	rep, out := runDir(t, writeDir(t, r), Options{})
	if got, want := rep.Runs[0].Counts, r.counts; got != want {
		t.Errorf("got counts %+v;\nwant %+v", got, want)
	}
	if want := "  exclusion: skipped, no acquire succeeded\n"; !strings.Contains(out, want) {
		t.Errorf("output lacks %q:\n%s", want, out)
	}
	for _, d := range rep.Runs[0].Disagreements {
		if d.Field != FieldHistory || !strings.Contains(d.Text, "follows no ok acquire") {
			t.Errorf("disagreement %s; want only enters that follow no acquire", d)
		}
	}
	if n := rep.Disagreements(); n != 8 {
		t.Errorf("%d disagreements; want one per enter, 8:\n%s", n, out)
	}
}

// TestUnsafeStrikes: a strike is unsafe when an unsafe outcome happens
// in its window, from its start to its close.
func TestUnsafeStrikes(t *testing.T) {
	h := newHist("lock", "setnx", "payment", false, false, []int64{120}, 0)
	h.offer(1, 0, 50)
	h.offer(2, 0, 50)
	h.offer(3, 0, 50)
	h.strike(1, 1000, 1500, 2500) // the duplicate of p1 at 2000
	h.strike(2, 3000, 3200, 4000) // nothing: the overdraft is at 4500
	h.strike(3, 5000, 5200, 6000) // the stale write accepted at 5500
	p1, p2, p3 := "lockbench:pay:1", "lockbench:pay:2", "lockbench:pay:3"
	h.acquire(0, 0, p1, 470, 475, true, 0)
	n := h.enter(0, 0, p1, 1, 0, 480, 0, 0, 120)
	h.finish(p1, n, 1, 0, 500, 0, applied(0, 50, 70, 1))
	h.acquire(0, 1, p1, 1970, 1975, true, 0)
	n = h.enter(0, 1, p1, 1, 0, 1980, 0, 1, 70)
	h.finish(p1, n, 1, 0, 2000, 0, applied(1, 50, 20, 2))
	h.acquire(0, 0, p2, 4470, 4475, true, 0)
	n = h.enter(0, 0, p2, 2, 0, 4480, 0, 2, 20)
	h.finish(p2, n, 2, 0, 4500, 0, applied(2, 50, -30, 3))
	h.acquire(0, 0, p3, 5090, 5095, true, 0)
	x := h.enter(0, 0, p3, 3, 0, 5100, 0, 3, -30)
	h.acquire(0, 1, p3, 5190, 5195, true, 0)
	y := h.enter(0, 1, p3, 3, 0, 5200, 0, 3, -30)
	h.finish(p3, y, 3, 0, 5300, 0, nil)
	h.finish(p3, x, 3, 0, 5500, 0, applied(3, 0, -30, 4))
	checkOne(t, &testRun{strategy: "setnx", hist: h}, Counts{
		Processed: 3, Duplicates: 1, Overdrafts: 1, StaleAccepted: 1,
		Overlaps: 1, OverlapNs: 100, OverlapMaxNs: 100, UnsafeStrikes: 2,
	})
}

// TestTakenOver: a lease that expired after its holder left the
// critical section but before it released is violated for porcupine,
// with no overlap at the store: reported, not a disagreement.
func TestTakenOver(t *testing.T) {
	h := newHist("lock", "setnx", "account", false, false, []int64{1000}, 0)
	h.offer(1, 0, 100)
	h.offer(2, 0, 100)
	h.acquire(0, 0, acct0, 10, 20, true, 0)
	a := h.enter(0, 0, acct0, 1, 0, 30, 0, 0, 1000)
	h.finish(acct0, a, 1, 0, 40, 0, applied(0, 100, 900, 1))
	h.hold(0, 1, acct0, 2, 0, 50, 0, 1, 900, 100)
	h.release(0, 0, acct0, 95, 105, false)
	_, out := checkOne(t, &testRun{strategy: "setnx", hist: h}, Counts{Processed: 2})
	if want := "  exclusion: lockbench:acct:0 violated: lease taken over after its holder left\n"; !strings.Contains(out, want) {
		t.Errorf("output lacks %q:\n%s", want, out)
	}
}

// TestExclusionDisagree: the store counted an overlap on a key whose
// holders' operations are one at a time: porcupine must not find an
// order for it, so this is a disagreement.
func TestExclusionDisagree(t *testing.T) {
	h := newHist("lock", "setnx", "account", false, false, []int64{1000}, 0)
	h.offer(1, 0, 100)
	h.acquire(0, 0, acct0, 10, 20, true, 0)
	h.release(0, 0, acct0, 30, 40, true)
	h.acquire(0, 1, acct0, 50, 60, true, 0)
	h.release(0, 1, acct0, 70, 80, true)
	a := h.enter(0, 0, acct0, 1, 0, 25, 0, 0, 1000)
	b := h.enter(0, 1, acct0, 1, 0, 26, 0, 0, 1000)
	h.finish(acct0, a, 1, 0, 27, 0, nil)
	h.finish(acct0, b, 1, 0, 65, 0, applied(0, 100, 900, 1))
	r := &testRun{strategy: "setnx", hist: h, counts: Counts{Processed: 1, Overlaps: 1, OverlapNs: 1, OverlapMaxNs: 1}}
	rep, out := runDir(t, writeDir(t, r), Options{})
	want := "DISAGREE setnx.contended.none.unfenced: exclusion key lockbench:acct:0: the store counted an overlap, porcupine found an order with one holder at a time\n"
	// Worker 1 entered (at 26) before its acquire (50): the history
	// contradicts itself too.
	also := "DISAGREE setnx.contended.none.unfenced: history contradicts itself: line 8: enter of payment 1 on key lockbench:acct:0 by instance 0 worker 1 follows no ok acquire"
	if rep.Disagreements() != 2 || !strings.Contains(out, want) || !strings.Contains(out, also) {
		t.Errorf("got %d disagreements, output\n%s; want 2: %s%s", rep.Disagreements(), out, want, also)
	}
}

// TestUncertainty: intervals widened by the clock uncertainty of their
// instance let an acquire that returned just before another instance's
// release be ordered after it.
func TestUncertainty(t *testing.T) {
	for _, c := range []struct {
		u    int64
		want KeyOutcome
	}{{0, KeyViolated}, {10, KeyOK}} {
		h := newHist("lock", "setnx", "account", false, false, []int64{1000}, c.u, c.u)
		h.acquire(0, 0, acct0, 10, 20, true, 0)
		h.release(0, 0, acct0, 112, 115, true)
		h.acquire(1, 0, acct0, 100, 110, true, 0)
		h.release(1, 0, acct0, 200, 210, true)
		rep, out := runDir(t, writeDir(t, &testRun{strategy: "setnx", hist: h}), Options{})
		if got := rep.Runs[0].Exclusion.Results[0].Outcome; got != c.want {
			t.Errorf("uncertainty %d: got %s; want %s\n%s", c.u, got, c.want, out)
		}
	}
}

// TestMaxKeys: keys beyond --max-keys are not checked, and a line says
// so.
func TestMaxKeys(t *testing.T) {
	h := newHist("lock", "setnx", "account", false, false, []int64{1000, 1000, 1000}, 0)
	for a := range 3 {
		k := "lockbench:acct:" + string(rune('0'+a))
		h.acquire(0, 0, k, 10, 20, true, 0)
		h.release(0, 0, k, 30, 40, true)
	}
	rep, out := runDir(t, writeDir(t, &testRun{strategy: "setnx", hist: h}), Options{MaxKeys: 2})
	if want := "  exclusion: 2 of 3 keys checked (--max-keys): 2 ok\n"; !strings.Contains(out, want) {
		t.Errorf("output lacks %q:\n%s", want, out)
	}
	if rep.Disagreements() != 0 {
		t.Errorf("got %d disagreements; want 0", rep.Disagreements())
	}
}

// TestNoHistory: a row without a history is said so; a directory with
// no history at all is refused, and a packed one is to be unpacked.
func TestNoHistory(t *testing.T) {
	with := &testRun{strategy: "setnx", hist: superseded(), counts: Counts{
		Processed: 2, Lost: 1, LostUpdates: 1, StaleAccepted: 1, Overlaps: 1, OverlapNs: 10, OverlapMaxNs: 10,
	}}
	without := &testRun{strategy: "mutex"}
	_, out := runDir(t, writeDir(t, with, without), Options{})
	if want := "no history mutex.contended.none.unfenced\n"; !strings.Contains(out, want) {
		t.Errorf("output lacks %q:\n%s", want, out)
	}

	var buf bytes.Buffer
	if _, err := Dir(context.Background(), writeDir(t, without), Options{}, &buf); !errors.Is(err, ErrNoHistory) {
		t.Errorf("got %v; want ErrNoHistory", err)
	}

	packed := t.TempDir()
	if err := os.WriteFile(filepath.Join(packed, "data.tar.zst"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Dir(context.Background(), packed, Options{}, &buf); err == nil || !strings.Contains(err.Error(), "tar --zstd -xf data.tar.zst") {
		t.Errorf("got %v; want the command that unpacks it", err)
	}
}

// TestUnreadable: a history that breaks the format is reported, the
// other runs are checked, and Dir says so with ErrUnreadable.
func TestUnreadable(t *testing.T) {
	bad := newHist("lock", "mutex", "account", false, false, []int64{1000}, 0)
	bad.lines[0]["version"] = FormatVersion + 1
	good := &testRun{strategy: "setnx", hist: superseded(), counts: Counts{
		Processed: 2, Lost: 1, LostUpdates: 1, StaleAccepted: 1, Overlaps: 1, OverlapNs: 10, OverlapMaxNs: 10,
	}}
	var out bytes.Buffer
	rep, err := Dir(context.Background(), writeDir(t, &testRun{strategy: "mutex", hist: bad}, good), Options{}, &out)
	if !errors.Is(err, ErrUnreadable) {
		t.Errorf("got %v; want ErrUnreadable", err)
	}
	if len(rep.Runs) != 2 || rep.Runs[1].Err != nil {
		t.Errorf("got %d runs; want both, the second judged", len(rep.Runs))
	}
	if !strings.Contains(out.String(), "unreadable mutex.contended.none.unfenced: ") || !strings.Contains(out.String(), fmt.Sprintf("format version %d", FormatVersion+1)) {
		t.Errorf("output lacks the unreadable run:\n%s", out.String())
	}
}

// Rows of one file with the same ID (a sweep's points) are runs of their
// own, their histories ID, ID.2, … as results.FileIDs names files: each
// row is judged by its own history.
func TestSameIDRows(t *testing.T) {
	clean := func(n int64) *hist {
		h := newHist("lock", "fencing", "account", true, false, []int64{1000}, 0)
		for p := int64(1); p <= n; p++ {
			h.offer(p, 0, 100)
			h.hold(0, 0, acct0, p, 0, 100*p, p, p-1, 1000-100*(p-1), 100)
		}
		return h
	}
	one := &testRun{strategy: "fencing", fencing: true, counts: Counts{Processed: 1}, hist: clean(1)}
	two := &testRun{strategy: "fencing", fencing: true, counts: Counts{Payments: 2, Processed: 2}}
	dir := writeDir(t, one, two)
	writeHistory(t, HistoryPath(dir, one.id()+".2"), clean(2))
	rep, out := runDir(t, dir, Options{})
	if rep.Disagreements() != 0 || !strings.Contains(out, "agree  "+one.id()+"\n") || !strings.Contains(out, "agree  "+one.id()+".2\n") {
		t.Errorf("got %d disagreements, output\n%s; want both runs to agree, the second as %s.2", rep.Disagreements(), out, one.id())
	}
}

// A history that contradicts itself is a disagreement naming the line:
// an enter removed (its key's entry numbers skip one), an enter whose
// acquire is removed, an enter whose processed is flipped, the end line
// cut.
func TestHistoryContradictions(t *testing.T) {
	clean := func() *hist {
		h := newHist("lock", "fencing", "account", true, false, []int64{1000}, 0)
		for p := int64(1); p <= 3; p++ {
			h.offer(p, 0, 100)
			h.hold(0, 0, acct0, p, 0, 100*p, p, p-1, 1000-100*(p-1), 100)
		}
		return h
	}
	find := func(h *hist, ev string, p int64) int {
		for i, l := range h.lines {
			if l["ev"] == ev && l["p"] == p {
				return i
			}
		}
		t.Fatalf("no %s of payment %d", ev, p)
		return -1
	}
	for _, c := range []struct {
		name, want string
		edit       func(h *hist)
	}{
		{"untouched", "", func(*hist) {}},
		{"enter removed", "its entry numbers skips 2", func(h *hist) {
			i := find(h, "enter", 2)
			h.lines = append(h.lines[:i:i], h.lines[i+1:]...)
		}},
		{"acquire removed", "follows no ok acquire", func(h *hist) {
			i := -1
			for j, l := range h.lines {
				if l["ev"] == "acquire" {
					i = j // the first one: payment 1's
					break
				}
			}
			h.lines = append(h.lines[:i:i], h.lines[i+1:]...)
		}},
		{"processed flipped", "read processed true", func(h *hist) { h.lines[find(h, "enter", 3)]["processed"] = true }},
		{"end cut", "no end line", func(h *hist) { h.noEnd = true }},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := clean()
			c.edit(h)
			r := &testRun{strategy: "fencing", fencing: true, hist: h, counts: Counts{Processed: 3}}
			r.fill()
			rep, out := runDir(t, writeDir(t, r), Options{})
			var got []string
			for _, d := range rep.Runs[0].Disagreements {
				if d.Field == FieldHistory {
					got = append(got, d.Text)
				}
			}
			switch {
			case c.want == "" && len(got) > 0:
				t.Errorf("untouched history: %q; want no contradiction", got)
			case c.want != "" && (len(got) == 0 || !strings.Contains(strings.Join(got, "\n"), c.want)):
				t.Errorf("got %q; want a contradiction saying %q\n%s", got, c.want, out)
			case c.want != "" && !strings.Contains(out, "DISAGREE "+r.id()+": history contradicts itself: "):
				t.Errorf("output names no contradiction:\n%s", out)
			}
		})
	}
}

// TestStrikesMissed: a designed strike missed when, from its lock's
// forgot to its end, no other holder's acquire of that key was answered
// or waited there for 250ms; an unsafe outcome in its window shows it
// landed.
func TestStrikesMissed(t *testing.T) {
	const s = int64(time.Second)
	h := newHist("lock", "setnx", "account", false, false, []int64{1000}, 0)
	h.offer(1, 0, 100)
	designed := func(n int, forgot, end, close int64) {
		h.add(map[string]any{"ev": "strike", "n": n, "fault": "restart-node", "target": "redis-0", "start": forgot - s/10, "end": end, "close": close,
			"k": acct0, "p": 1, "i": 0, "w": 0, "forgot": forgot})
	}
	h.acquire(0, 0, acct0, s/2, s/2+10, true, 0)
	n := h.enter(0, 0, acct0, 1, 0, s/2+20, 0, 0, 1000)
	designed(1, s, s+s/2, 2*s)
	// Strike 1 landed: another holder waited 0.5s in its window, refused.
	h.acquire(1, 0, acct0, s-s/10, s+s/2+s/10, false, 0)
	h.finish(acct0, n, 1, 0, s+s/2, 0, applied(0, 100, 900, 1))
	h.release(0, 0, acct0, s+s/2+10, s+s/2+20, true)
	// Strike 2 missed: the holder's own acquire, and another's of a
	// different key, do not count; one waiting 0.1s is too short.
	designed(2, 3*s, 3*s+s/2, 4*s)
	h.acquire(0, 0, acct0, 3*s+s/10, 3*s+s/5, false, 0)
	h.acquire(1, 1, "lockbench:acct:1", 3*s, 3*s+s/2, false, 0)
	h.acquire(1, 0, acct0, 3*s+s/2-s/10, 3*s+s, false, 0)
	// Strike 3 missed: its holder's process was stopped, and the only
	// waiter is another worker of that instance.
	h.add(map[string]any{"ev": "strike", "n": 3, "fault": "pause", "target": "instance 0", "start": 5 * s, "end": 6 * s, "close": 7 * s,
		"k": acct0, "p": 1, "i": 0, "w": 0, "caught": 5 * s, "forgot": 5*s + s/10, "stopped": true})
	h.acquire(0, 2, acct0, 5*s, 6*s+s/10, false, 0)
	// Strike 4 landed: another holder was granted the lock after the
	// catch, before the fault said it forgot it.
	h.add(map[string]any{"ev": "strike", "n": 4, "fault": "restart-node", "target": "redis-0", "start": 8 * s, "end": 8*s + s/2, "close": 9 * s,
		"k": acct0, "p": 1, "i": 0, "w": 0, "caught": 8 * s, "forgot": 8*s + s/5})
	h.acquire(1, 3, acct0, 8*s, 8*s+s/10, true, 0)
	h.release(1, 3, acct0, 8*s+s/10+10, 8*s+s/10+20, true)
	// Strike 5 caught nobody, and its line says it missed.
	h.add(map[string]any{"ev": "strike", "n": 5, "fault": "restart-node", "target": "redis-3, redis-4 refused", "start": 10 * s, "end": 11 * s, "close": 12 * s, "missed": true})
	checkOne(t, &testRun{strategy: "setnx", hist: h}, Counts{Payments: 1, Strikes: 5, Processed: 1, NotAcquired: 5, StrikesMissed: 3})
}
