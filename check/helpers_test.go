package check

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// hist builds a synthetic history line by line, numbering each key's
// store events (seq) and entries (n) as the store does.
type hist struct {
	lines   []map[string]any
	seq     map[string]int64
	entries map[string]int64
	// made is each account's applied writes by the version they made:
	// an enter reads its payment processed when a write of it is on the
	// chain of the version it reads, as the store's record does.
	made map[int]map[int64][2]int64 // version → {base, payment}
	// noEnd leaves out the end line encodeLines otherwise adds.
	noEnd bool
}

// newHist starts a history with its header; clock lists the instances'
// uncertainties in ns, by instance.
func newHist(kind, strategy, mode string, fencing, strict bool, balances []int64, clock ...int64) *hist {
	var cl []map[string]any
	for i, u := range clock {
		cl = append(cl, map[string]any{"instance": i, "where": "process", "offset_ns": 0, "uncertainty_ns": u})
	}
	h := &hist{seq: map[string]int64{}, entries: map[string]int64{}, made: map[int]map[int64][2]int64{}}
	h.add(map[string]any{
		"ev": "header", "version": FormatVersion, "run": "test", "strategy": strategy, "kind": kind,
		"store": "memory", "mode": mode, "fencing": fencing, "strict": strict,
		"deliveries": 2, "balances": balances, "payments": 0, "clock": cl,
	})
	return h
}

// add appends a line.
func (h *hist) add(m map[string]any) { h.lines = append(h.lines, m) }

// offer offers payment p of account a.
func (h *hist) offer(p int64, a int, amount int64) {
	h.add(map[string]any{"ev": "offer", "p": p, "a": a, "amount": amount})
}

// acquire records worker (i, w)'s acquire of k.
func (h *hist) acquire(i, w int, k string, inv, ret int64, ok bool, token int64) {
	m := map[string]any{"ev": "acquire", "i": i, "w": w, "k": k, "inv": inv, "ret": ret, "ok": ok, "token": token}
	if !ok {
		m["err"] = "not_acquired"
	}
	h.add(m)
}

// release records worker (i, w)'s release of k.
func (h *hist) release(i, w int, k string, inv, ret int64, ok bool) {
	m := map[string]any{"ev": "release", "i": i, "w": w, "k": k, "inv": inv, "ret": ret, "ok": ok}
	if !ok {
		m["err"] = "not_owner"
	}
	h.add(m)
}

// enter records an enter of k by (i, w) and returns its entry number.
func (h *hist) enter(i, w int, k string, p int64, a int, at, token, version, balance int64) int64 {
	h.seq[k]++
	h.entries[k]++
	n := h.entries[k]
	h.add(map[string]any{"ev": "enter", "i": i, "w": w, "p": p, "a": a, "k": k, "seq": h.seq[k], "n": n,
		"at": at, "token": token, "processed": h.processed(a, version, p), "balance": balance, "version": version})
	return n
}

// processed is whether payment p is on the chain of account a's version.
func (h *hist) processed(a int, version, p int64) bool {
	for v := version; v > 0; {
		m, ok := h.made[a][v]
		if !ok {
			return false
		}
		if m[1] == p {
			return true
		}
		v = m[0]
	}
	return false
}

// finish records the finish of entry n of k; wr is its write, nil for
// none.
func (h *hist) finish(k string, n, p int64, a int, at, token int64, wr map[string]any) {
	h.seq[k]++
	m := map[string]any{"ev": "finish", "p": p, "a": a, "k": k, "seq": h.seq[k], "n": n, "at": at, "token": token}
	if wr != nil && wr["applied"] == true {
		if h.made[a] == nil {
			h.made[a] = map[int64][2]int64{}
		}
		h.made[a][wr["version"].(int64)] = [2]int64{wr["base"].(int64), p}
	}
	if wr != nil {
		m["write"] = wr
	}
	h.add(m)
}

// applied is an applied write.
func applied(base, debit, balance, version int64) map[string]any {
	return map[string]any{"base": base, "debit": debit, "balance": balance, "applied": true, "version": version}
}

// refused is a refused write.
func refused(base, debit, balance int64, why string) map[string]any {
	return map[string]any{"base": base, "debit": debit, "balance": balance, "applied": false, "refused": why}
}

// hold records a whole, clean hold of k by (i, w) from t0: acquire,
// enter reading version and balance, finish writing the debit as the
// next version, release.
func (h *hist) hold(i, w int, k string, p int64, a int, t0, token, version, balance, debit int64) {
	h.acquire(i, w, k, t0, t0+10, true, token)
	n := h.enter(i, w, k, p, a, t0+20, token, version, balance)
	h.finish(k, n, p, a, t0+30, token, applied(version, debit, balance-debit, version+1))
	h.release(i, w, k, t0+40, t0+50, true)
}

// strike records a fault's strike.
func (h *hist) strike(n int, start, end, close int64) {
	h.add(map[string]any{"ev": "strike", "n": n, "fault": "pause", "target": "instance 0", "start": start, "end": end, "close": close})
}

// testRun is one run of a test directory: its row's identity, the counts
// its summary.json row says, and its history (nil for none).
type testRun struct {
	strategy string
	fencing  bool
	counts   Counts
	hist     *hist
	// extra are more fields of its row (verdict, availability, …).
	extra map[string]any
}

// id is the run's ID, as results names it.
func (r *testRun) id() string {
	return identity{Strategy: r.strategy, Scenario: "contended", Fault: "none", Fencing: r.fencing}.id()
}

// fill gives r's counts, when it has none of them, the payments, the
// acquires given up and the strikes its history's lines count.
func (r *testRun) fill() {
	c := &r.counts
	if r.hist == nil || c.Payments != 0 || c.NotAcquired != 0 || c.Strikes != 0 {
		return
	}
	c.Payments, c.NotAcquired, c.Strikes = r.hist.lineCounts()
	if r.hist.lines[0]["kind"] != "lock" {
		c.NotAcquired = 0
	}
}

// row is the run's summary.json row.
func (r *testRun) row(t *testing.T) map[string]any {
	t.Helper()
	r.fill()
	b, err := json.Marshal(r.counts)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	m["strategy"], m["scenario"], m["fault"], m["variant"] = r.strategy, "contended", "none", ""
	m["fencing"], m["trial"] = r.fencing, 1
	for k, v := range r.extra {
		m[k] = v
	}
	return m
}

// writeDir writes a run directory of runs into a new temporary
// directory: summary.json, and history/ID.jsonl.zst for the runs with a
// history.
func writeDir(t *testing.T, runs ...*testRun) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, HistoryDir), 0o755); err != nil {
		t.Fatal(err)
	}
	var rows []map[string]any
	for _, r := range runs {
		rows = append(rows, r.row(t))
		if r.hist != nil {
			writeHistory(t, HistoryPath(dir, r.id()), r.hist)
		}
	}
	writeJSON(t, filepath.Join(dir, "summary.json"), rows)
	return dir
}

// writeJSON writes v as JSON to path.
func writeJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// writeHistory writes h to path as zstd-compressed JSON lines.
func writeHistory(t *testing.T, path string, h *hist) {
	t.Helper()
	var buf bytes.Buffer
	zw, err := zstd.NewWriter(&buf)
	if err != nil {
		t.Fatal(err)
	}
	encodeLines(t, zw, h)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// decodeTest decodes h as Dir would read it.
func decodeTest(t *testing.T, h *hist) *history {
	t.Helper()
	var buf bytes.Buffer
	encodeLines(t, &buf, h)
	d, err := decodeHistory(&buf)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// encodeLines writes the lines of h to w, one JSON object a line.
func encodeLines(t *testing.T, w io.Writer, h *hist) {
	t.Helper()
	enc := json.NewEncoder(w)
	for _, l := range h.lines {
		if err := enc.Encode(l); err != nil {
			t.Fatal(err)
		}
	}
	if last := h.lines[len(h.lines)-1]; !h.noEnd && last["ev"] != "end" {
		if err := enc.Encode(map[string]any{"ev": "end"}); err != nil {
			t.Fatal(err)
		}
	}
}

// lineCounts are the counts of h's lines that summary.json carries
// too: the payments offered (the end line's, else the offer lines), the
// acquires given up and the strikes.
func (h *hist) lineCounts() (payments, notAcquired, strikes int64) {
	for _, l := range h.lines {
		switch l["ev"] {
		case "offer":
			payments++
		case "end":
			if n, ok := l["payments"].(int64); ok {
				return n, notAcquired, strikes
			}
		case "acquire":
			if l["err"] == "not_acquired" {
				notAcquired++
			}
		case "strike":
			strikes++
		}
	}
	return payments, notAcquired, strikes
}

// runDir checks dir with opt and returns the report and the output.
func runDir(t *testing.T, dir string, opt Options) (Report, string) {
	t.Helper()
	var out bytes.Buffer
	rep, err := Dir(context.Background(), dir, opt, &out)
	if err != nil {
		t.Fatalf("Dir: %v\n%s", err, out.String())
	}
	return rep, out.String()
}

// checkOne writes r alone into a directory, checks it, and fails the test
// unless the history derives want and agrees with the row.
func checkOne(t *testing.T, r *testRun, want Counts) (RunReport, string) {
	t.Helper()
	r.counts = want
	r.fill()
	want = r.counts
	dir := writeDir(t, r)
	rep, out := runDir(t, dir, Options{})
	if len(rep.Runs) != 1 {
		t.Fatalf("got %d runs; want 1\n%s", len(rep.Runs), out)
	}
	rr := rep.Runs[0]
	if rr.Counts != want {
		t.Errorf("got counts %+v;\nwant %+v", rr.Counts, want)
	}
	if n := rep.Disagreements(); n != 0 {
		t.Errorf("got %d disagreements; want 0\n%s", n, out)
	}
	return rr, out
}
