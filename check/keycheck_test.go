package check

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// ops makes porcupine operations of client 0 from [call, return] pairs,
// acquires and releases in turn.
func ops(spans ...[2]int64) []porcupine.Operation {
	var out []porcupine.Operation
	for j, s := range spans {
		out = append(out, porcupine.Operation{Input: lockInput{release: j%2 == 1}, Call: s[0], Return: s[1]})
	}
	return out
}

// TestChunks: a key is cut only where no operation is in flight, and
// the parts are packed into chunks of at most size operations when they
// are that small.
func TestChunks(t *testing.T) {
	for _, c := range []struct {
		name  string
		ops   []porcupine.Operation
		size  int
		sizes []int
	}{
		// Four operations one after another: each is a part.
		{"sequential", ops([2]int64{0, 1}, [2]int64{2, 3}, [2]int64{4, 5}, [2]int64{6, 7}), 2, []int{2, 2}},
		// Intervals that touch are concurrent (closed intervals): no cut.
		{"touching", ops([2]int64{0, 2}, [2]int64{2, 3}, [2]int64{4, 5}), 1, []int{2, 1}},
		// A long call keeps three operations in flight together: one part
		// longer than size, then the rest.
		{"in flight", ops([2]int64{0, 10}, [2]int64{1, 2}, [2]int64{3, 4}, [2]int64{11, 12}), 2, []int{3, 1}},
		// Everything fits in one chunk.
		{"one chunk", ops([2]int64{0, 1}, [2]int64{2, 3}, [2]int64{4, 5}), 10, []int{3}},
	} {
		var got []int
		for _, ch := range chunks(c.ops, c.size) {
			got = append(got, len(ch))
		}
		if !slices.Equal(got, c.sizes) {
			t.Errorf("%s: got chunks of %v; want %v", c.name, got, c.sizes)
		}
	}
}

// TestAfter: the state after a chunk follows from the counts alone, and
// counts no legal order can give are caught.
func TestAfter(t *testing.T) {
	acq := func(c int) porcupine.Operation { return porcupine.Operation{Input: lockInput{client: c}} }
	rel := func(c int) porcupine.Operation {
		return porcupine.Operation{Input: lockInput{client: c, release: true}}
	}
	for _, c := range []struct {
		name  string
		from  int
		ops   []porcupine.Operation
		want  int
		legal bool
	}{
		{"handed over", free, []porcupine.Operation{acq(0), rel(0), acq(1)}, 1, true},
		{"released by its holder", 1, []porcupine.Operation{rel(1)}, free, true},
		{"two holders", free, []porcupine.Operation{acq(0), acq(1)}, 0, false},
		{"released twice", 0, []porcupine.Operation{rel(0), rel(0)}, 0, false},
	} {
		got, ok := after(c.from, c.ops)
		if ok != c.legal || ok && got != c.want {
			t.Errorf("%s: got %d, %v; want %d, %v", c.name, got, ok, c.want, c.legal)
		}
	}
}

// TestCuts: a part longer than --max-ops-per-key, and a key out of
// time, are left unchecked and said so.
func TestCuts(t *testing.T) {
	h := newHist("lock", "setnx", "account", false, false, []int64{1000}, 0)
	h.acquire(0, 0, acct0, 10, 20, true, 0)
	h.acquire(0, 1, acct0, 15, 100, true, 0) // waits: in flight across the next two
	h.release(0, 0, acct0, 30, 40, true)
	h.release(0, 1, acct0, 110, 120, true)
	h.acquire(0, 0, acct0, 200, 210, true, 0)
	h.release(0, 0, acct0, 220, 230, true)
	for _, c := range []struct {
		opt     Options
		checked int
		note    string
	}{
		{Options{MaxOpsPerKey: 2}, 3, "  exclusion: lockbench:acct:0 checked on 3 of 6 operations (--max-ops-per-key)\n"},
		{Options{KeyTimeout: time.Nanosecond}, 0, "  exclusion: lockbench:acct:0 checked on 0 of 6 operations (--key-timeout)\n"},
	} {
		rep, out := runDir(t, writeDir(t, &testRun{strategy: "setnx", hist: h}), c.opt)
		r := rep.Runs[0].Exclusion.Results[0]
		if r.Outcome != KeyPartial || r.Checked != c.checked {
			t.Errorf("%+v: got %s on %d operations; want partial on %d", c.opt, r.Outcome, r.Checked, c.checked)
		}
		if !strings.Contains(out, c.note) {
			t.Errorf("output lacks %q:\n%s", c.note, out)
		}
	}
}

// TestChunkState: a violation in a later chunk is found from the state
// the earlier chunks left.
func TestChunkState(t *testing.T) {
	h := newHist("lock", "setnx", "account", false, false, []int64{1000}, 0)
	h.acquire(0, 0, acct0, 10, 20, true, 0)
	h.release(0, 0, acct0, 30, 40, true)
	h.acquire(0, 1, acct0, 50, 60, true, 0) // never released
	h.acquire(0, 0, acct0, 70, 80, true, 0)
	h.release(0, 0, acct0, 90, 100, true)
	opt := Options{MaxOpsPerKey: 1}.withDefaults()
	kd := decodeTest(t, h).keys[acct0]
	o, names := keyOps(kd.ops, nil)
	kc := checkKey(context.Background(), acct0, o, names, &opt, time.Now().Add(time.Minute))
	if kc.Outcome != KeyViolated {
		t.Errorf("got %s; want violated", kc.Outcome)
	}
}
