package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/lockbench/lockbench/loadgen"
	"github.com/lockbench/lockbench/results"
)

// checkCmdTimeout bounds each lockbench command these tests run.
const checkCmdTimeout = 60 * time.Second

// cmdResult is what a lockbench command returned and printed.
type cmdResult struct {
	err  error
	code int    // its exit code (ExitCode)
	out  string // stdout
	errs string // stderr, with ExitCode's line last
}

// checkCmd runs lockbench with args.
func checkCmd(t *testing.T, args ...string) cmdResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), checkCmdTimeout)
	defer cancel()
	var out, errb bytes.Buffer
	err := Run(ctx, args, &out, &errb)
	if ctx.Err() != nil {
		t.Fatalf("lockbench %s did not finish within %s", strings.Join(args, " "), checkCmdTimeout)
	}
	code := ExitCode(err, &errb)
	return cmdResult{err: err, code: code, out: out.String(), errs: errb.String()}
}

// checkRunDir runs a tiny nolock run with its history into a fresh run
// directory, and returns the directory and the run's ID.
func checkRunDir(t *testing.T) (string, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "run")
	r := checkCmd(t, "run", "--strategy", "nolock", "--payments", "300", "--accounts", "4",
		"--instances", "3", "--workers", "4", "--history", "--out", dir)
	if r.err != nil {
		t.Fatalf("run: %v (exit %d)\n%s%s", r.err, r.code, r.out, r.errs)
	}
	rows := checkRows(t, dir)
	if len(rows) != 1 {
		t.Fatalf("summary.json has %d rows; want 1", len(rows))
	}
	var s results.Summary
	if err := remarshal(rows[0], &s); err != nil {
		t.Fatal(err)
	}
	id := s.ID()
	if _, err := os.Stat(filepath.Join(dir, results.HistoryDir, id+results.HistoryExt)); err != nil {
		t.Fatalf("the run's history: %v", err)
	}
	return dir, id
}

// checkRows reads dir's summary.json as plain objects.
func checkRows(t *testing.T, dir string) []map[string]any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, results.SummaryJSONFile))
	if err != nil {
		t.Fatal(err)
	}
	var rows []map[string]any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber() // keep every number as written
	if err := dec.Decode(&rows); err != nil {
		t.Fatal(err)
	}
	return rows
}

func remarshal(from, to any) error {
	b, err := json.Marshal(from)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, to)
}

// `lockbench check` agrees with a real run's summary.json (exit 0), and a
// summary.json with one count changed makes it exit 5, naming the run and
// the field on a DISAGREE line.
func TestCheckDisagreementExits5(t *testing.T) {
	dir, id := checkRunDir(t)
	r := checkCmd(t, "check", dir)
	if r.err != nil || r.code != 0 {
		t.Fatalf("check of an untouched run: %v (exit %d); want exit 0\n%s%s", r.err, r.code, r.out, r.errs)
	}
	if !strings.Contains(r.out, "agree  "+id) || strings.Contains(r.out, "DISAGREE") {
		t.Fatalf("check of an untouched run:\n%s", r.out)
	}

	// One count changed: duplicates one more than the store found.
	rows := checkRows(t, dir)
	dup, err := rows[0]["duplicates"].(json.Number).Int64()
	if err != nil {
		t.Fatalf("duplicates: %v", err)
	}
	if dup == 0 {
		t.Fatalf("nolock, two deliveries: no duplicate in summary.json; want the control caught")
	}
	rows[0]["duplicates"] = dup + 1
	data, err := json.MarshalIndent(rows, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, results.SummaryJSONFile), data, 0o644); err != nil {
		t.Fatal(err)
	}

	r = checkCmd(t, "check", dir)
	if r.code != 5 || !errors.Is(r.err, ErrDisagree) || ExitCode(r.err, io.Discard) != 5 {
		t.Fatalf("check of a changed summary.json: %v (exit %d); want ErrDisagree, exit 5\n%s%s", r.err, r.code, r.out, r.errs)
	}
	var lines []string
	for l := range strings.SplitSeq(r.out, "\n") {
		if strings.HasPrefix(l, "DISAGREE") {
			lines = append(lines, l)
		}
	}
	if len(lines) != 1 {
		t.Fatalf("check: %d DISAGREE lines; want 1, on duplicates:\n%s", len(lines), r.out)
	}
	if l := lines[0]; !strings.Contains(l, id) || !strings.Contains(l, "duplicates") || !strings.Contains(l, "summary.json") {
		t.Errorf("check's line %q; want the run %s, the field duplicates and summary.json named", l, id)
	}
	if strings.Contains(r.out, "agree  "+id) {
		t.Errorf("check said the run agrees:\n%s", r.out)
	}
	if !strings.Contains(r.errs, "disagree") || strings.Count(strings.TrimSpace(r.errs), "\n") != 0 {
		t.Errorf("check's stderr %q; want one line saying they disagree", r.errs)
	}
}

// `lockbench check`'s bad input is a usage error: exit 2, one line that
// names the command or the flag at fault.
func TestCheckUsage(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "summary.json")
	if err := os.WriteFile(file, []byte("[]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string // in the one line
	}{
		{"no argument", []string{"check"}, "check: "},
		{"two arguments", []string{"check", dir, dir}, "check: "},
		{"a file", []string{"check", file}, "check: "},
		{"missing", []string{"check", filepath.Join(dir, "nowhere")}, "check: "},
		{"max-keys 0", []string{"check", "--max-keys", "0", dir}, "--max-keys"},
		{"max-keys negative", []string{"check", "--max-keys", "-1", dir}, "--max-keys"},
		{"max-ops-per-key 1", []string{"check", "--max-ops-per-key", "1", dir}, "--max-ops-per-key"},
		{"key-timeout 0", []string{"check", "--key-timeout", "0s", dir}, "--key-timeout"},
		{"timeout 0", []string{"check", "--timeout", "0s", dir}, "--timeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := checkCmd(t, tc.args...)
			if r.code != 2 || !isUsage(r.err) {
				t.Fatalf("lockbench %s: %v (exit %d); want a usage error, exit 2\n%s", strings.Join(tc.args, " "), r.err, r.code, r.out)
			}
			if strings.Count(r.errs, "\n") != 1 || !strings.Contains(r.errs, tc.want) {
				t.Errorf("lockbench %s says %q; want one line naming %s", strings.Join(tc.args, " "), r.errs, tc.want)
			}
			if r.out != "" {
				t.Errorf("lockbench %s printed %q to stdout; want nothing", strings.Join(tc.args, " "), r.out)
			}
			// The parse step alone (check) says the same.
			if cerr := check(tc.args); !isUsage(cerr) {
				t.Errorf("check(%q) = %v; want the usage error", tc.args, cerr)
			}
		})
	}
}

// A run directory without histories (a run without --history), or with no
// summary.json at all, is a clear error: not exit 0, not a panic, not a
// disagreement, with a line that says what is missing.
func TestCheckNoHistory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	if r := checkCmd(t, "run", "--strategy", "nolock", "--payments", "50", "--out", dir); r.err != nil {
		t.Fatalf("run: %v (exit %d)\n%s%s", r.err, r.code, r.out, r.errs)
	}
	empty := t.TempDir()
	for _, tc := range []struct {
		name, dir, want string
	}{
		{"run without --history", dir, "--history"},
		{"empty directory", empty, results.SummaryJSONFile},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := checkCmd(t, "check", tc.dir)
			if r.err == nil || r.code != 1 {
				t.Fatalf("check of %s: %v (exit %d); want an error, exit 1\n%s%s", tc.name, r.err, r.code, r.out, r.errs)
			}
			if strings.Contains(r.out, "agree") {
				t.Errorf("check of %s printed a verdict:\n%s", tc.name, r.out)
			}
			if strings.Count(strings.TrimSpace(r.errs), "\n") != 0 || !strings.Contains(r.errs, tc.want) || !strings.Contains(r.errs, tc.dir) {
				t.Errorf("check of %s says %q; want one line naming %s and %s", tc.name, r.errs, tc.dir, tc.want)
			}
		})
	}
}

// A flag the flag package itself refuses (unknown, or not a number) is
// the same one line as every other usage error of lockbench check, with
// nothing else on stderr; and -h prints the help once, to stdout. (As
// written, parseCheck's first fs.Parse writes to stderr: the flag
// package's own error and the whole usage come before the line, and -h
// prints the usage to stderr as well as to stdout. parseRunDirArg, for
// report and pack, sets the output to io.Discard before parsing.)
func TestCheckFlagErrorIsOneLine(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown flag", []string{"check", "--nope", dir}, "-nope"},
		{"max-keys not a number", []string{"check", "--max-keys", "many", dir}, "max-keys"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := checkCmd(t, tc.args...)
			if r.code != 2 || !isUsage(r.err) {
				t.Fatalf("lockbench %s: %v (exit %d); want a usage error, exit 2", strings.Join(tc.args, " "), r.err, r.code)
			}
			if strings.Count(r.errs, "\n") != 1 || !strings.Contains(r.errs, tc.want) {
				t.Errorf("lockbench %s writes to stderr:\n%s\nwant one line naming %s", strings.Join(tc.args, " "), r.errs, tc.want)
			}
		})
	}
	t.Run("help", func(t *testing.T) {
		r := checkCmd(t, "check", "-h")
		if r.code != 0 || !strings.Contains(r.out, "max-keys") {
			t.Fatalf("lockbench check -h: %v (exit %d), stdout %q; want exit 0 and the help on stdout", r.err, r.code, r.out)
		}
		if r.errs != "" {
			t.Errorf("lockbench check -h writes to stderr too:\n%s", r.errs)
		}
	})
}

// The store's other ways in are judged alike: a transactional strategy
// (pg-unique, on the Postgres store, each delivery a transaction whose
// bookkeeping Enter and Finish are the history's) and the sequenced store
// transport (Enters applied in the order of a shared sequence) both leave
// histories the second judge agrees with.
func TestCheckAgreesTransactionalAndSequenced(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Postgres and instance processes; skipped with -short")
	}
	for name, args := range map[string][]string{
		"pg-unique": {"--strategy", "pg-unique", "--store", "postgres", "--hold", "1ms"},
		"sequenced": {"--strategy", "nolock", "--instance-mode", "process", "--store-transport", "sequenced", "--hold", "1ms"},
	} {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "run")
			r := checkCmd(t, append([]string{"run", "--payments", "300", "--accounts", "4", "--instances", "3",
				"--workers", "4", "--history", "--out", dir}, args...)...)
			if r.err != nil {
				t.Fatalf("run: %v (exit %d)\n%s%s", r.err, r.code, r.out, r.errs)
			}
			c := checkCmd(t, "check", dir)
			if c.code != 0 || !strings.Contains(c.out, "agree  ") {
				t.Errorf("check: exit %d; want 0 and agreement\n%s%s", c.code, c.out, c.errs)
			}
		})
	}
}

// Runs of one directory with the same ID (a sweep's points) keep a
// history each, named as results.FileIDs names their interval logs: ID,
// ID.2, ID.3, …, a history still being written counting as taken.
func TestFreeHistoryPath(t *testing.T) {
	dir := t.TempDir()
	name := func(p string) string { return filepath.Base(p) }
	if got := name(freeHistoryPath(dir, "a")); got != "a"+results.HistoryExt {
		t.Errorf("first: %s", got)
	}
	for _, f := range []string{"a" + results.HistoryExt, "a.2" + results.HistoryExt + ".part"} {
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if got := name(freeHistoryPath(dir, "a")); got != "a.3"+results.HistoryExt {
		t.Errorf("after a and a.2 (under way): %s; want a.3%s", got, results.HistoryExt)
	}
}

// Every field of summary.json the history derives is judged: one edit at
// a time, each makes `lockbench check` exit 5 with a DISAGREE line naming
// the field, the verdict and unsafe included.
func TestCheckJudgesEveryField(t *testing.T) {
	dir, id := checkRunDir(t)
	orig, err := os.ReadFile(filepath.Join(dir, results.SummaryJSONFile))
	if err != nil {
		t.Fatal(err)
	}
	num := func(v any) int64 { n, _ := v.(json.Number).Int64(); return n }
	for _, c := range []struct {
		field string
		edit  func(row map[string]any)
	}{
		{"unsafe", func(r map[string]any) { r["unsafe"] = !r["unsafe"].(bool) }},
		{"verdict", func(r map[string]any) { r["verdict"] = results.VerdictSafe }},
		{"payments", func(r map[string]any) { r["payments"] = num(r["payments"]) + 1 }},
		{"not_acquired", func(r map[string]any) { r["not_acquired"] = num(r["not_acquired"]) + 3 }},
		{"strikes", func(r map[string]any) { r["strikes"] = num(r["strikes"]) + 1 }},
		{"availability", func(r map[string]any) { r["availability"] = 0.5 }},
		{"errors.timeout", func(r map[string]any) { r["errors"] = map[string]any{"timeout": 2} }},
	} {
		t.Run(c.field, func(t *testing.T) {
			if err := os.WriteFile(filepath.Join(dir, results.SummaryJSONFile), orig, 0o644); err != nil {
				t.Fatal(err)
			}
			rows := checkRows(t, dir)
			c.edit(rows[0])
			data, err := json.MarshalIndent(rows, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, results.SummaryJSONFile), data, 0o644); err != nil {
				t.Fatal(err)
			}
			r := checkCmd(t, "check", dir)
			want := "DISAGREE " + id + ": " + c.field + " history "
			if r.code != 5 || !strings.Contains(r.out, want) {
				t.Errorf("check after editing %s: exit %d; want 5 and a line %q\n%s", c.field, r.code, want, r.out)
			}
		})
	}
}

// `check --json` prints its own figures per run beside the row's: the
// derived counts and verdict of a real run equal summary.json's.
func TestCheckJSON(t *testing.T) {
	dir, id := checkRunDir(t)
	r := checkCmd(t, "check", "--json", dir)
	if r.code != 0 {
		t.Fatalf("check --json: exit %d\n%s%s", r.code, r.out, r.errs)
	}
	var runs []checkRunJSON
	if err := json.Unmarshal([]byte(r.out), &runs); err != nil {
		t.Fatalf("check --json printed no JSON: %v\n%s", err, r.out)
	}
	if len(runs) != 1 || runs[0].ID != id || runs[0].Derived == nil || runs[0].Judgement == nil || len(runs[0].Rows) != 1 {
		t.Fatalf("check --json: %+v; want run %s with its figures and its row", runs, id)
	}
	got, row := runs[0], runs[0].Rows[0]
	if got.Derived.Payments != row.Counts["payments"] || got.Derived.Duplicates != row.Counts["duplicates"] || got.Derived.Duplicates == 0 {
		t.Errorf("derived payments %d, duplicates %d; the row's %d, %d (want equal, duplicates above 0: nolock)",
			got.Derived.Payments, got.Derived.Duplicates, row.Counts["payments"], row.Counts["duplicates"])
	}
	if got.Judgement.Verdict != results.VerdictUnsafe || row.Verdict == nil || *row.Verdict != results.VerdictUnsafe {
		t.Errorf("verdict: derived %q, row %v; want unsafe both", got.Judgement.Verdict, row.Verdict)
	}
}

// A history's header says the run's fencing, as its file name and summary
// row do (format version 2): under --fencing strict, true and strict for
// the fencing strategy, false for setnx, which issues no token.
func TestHistoryHeaderFencing(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	r := checkCmd(t, "run", "--strategy", "fencing,setnx", "--fencing", "strict", "--payments", "40", "--history", "--out", dir)
	if r.err != nil {
		t.Fatalf("run: %v (exit %d)\n%s%s", r.err, r.code, r.out, r.errs)
	}
	for _, c := range []struct {
		file            string
		fencing, strict bool
	}{
		{"fencing.base.none.fencing_strict.fenced", true, true},
		{"setnx.base.none.unfenced", false, false},
	} {
		f, err := os.Open(filepath.Join(dir, results.HistoryDir, c.file+results.HistoryExt))
		if err != nil {
			t.Fatal(err)
		}
		zr, err := zstd.NewReader(f)
		if err != nil {
			t.Fatal(err)
		}
		var h struct {
			Version         int
			Fencing, Strict bool
		}
		err = json.NewDecoder(zr).Decode(&h)
		zr.Close()
		f.Close()
		if err != nil {
			t.Fatalf("%s: header: %v", c.file, err)
		}
		if h.Version != loadgen.HistoryVersion || h.Fencing != c.fencing || h.Strict != c.strict {
			t.Errorf("%s: header version %d, fencing %v, strict %v; want %d, %v, %v", c.file, h.Version, h.Fencing, h.Strict, loadgen.HistoryVersion, c.fencing, c.strict)
		}
	}
	if r := checkCmd(t, "check", dir); r.err != nil || r.code != 0 {
		t.Errorf("check: %v (exit %d)\n%s%s", r.err, r.code, r.out, r.errs)
	}
}
