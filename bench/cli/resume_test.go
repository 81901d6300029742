package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockbench/lockbench/results"
)

// The command line as --resume compares it: where the directory is and
// --force are left out.
func TestResumeCommand(t *testing.T) {
	for in, want := range map[string]string{
		"lockbench verdicts --strategy setnx --out D":                    "lockbench verdicts --strategy setnx",
		"lockbench verdicts --out=D --strategy setnx --resume D --force": "lockbench verdicts --strategy setnx",
		"lockbench matrix --quick --resume=D":                            "lockbench matrix --quick",
		"lockbench verdicts --trials 3 --out D --fault pause":            "lockbench verdicts --trials 3 --fault pause",
	} {
		if got := resumeCommand(in); got != want {
			t.Errorf("resumeCommand(%q) = %q; want %q", in, got, want)
		}
	}
}

// --resume refuses, in one line and exit 2, a directory that is not a run
// directory, and --force alone.
func TestResumeUsage(t *testing.T) {
	notRun := t.TempDir()
	if err := os.WriteFile(filepath.Join(notRun, "notes.txt"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"verdicts", "--resume", filepath.Join(notRun, "missing")}, "no such run directory"},
		{[]string{"verdicts", "--resume", notRun}, "holds no lockbench run"},
		{[]string{"verdicts", "--force"}, "--force: only with --resume"},
		{[]string{"verdicts", "--resume", notRun, "--out", t.TempDir()}, "--out names another"},
	} {
		var out, errb bytes.Buffer
		err := Run(context.Background(), tc.args, &out, &errb)
		if code := ExitCode(err, &errb); code != 2 || !strings.Contains(errb.String(), tc.want) || strings.Count(strings.TrimSpace(errb.String()), "\n") != 0 {
			t.Errorf("%s: exit %d, stderr %q; want 2 and one line saying %q", strings.Join(tc.args, " "), code, errb.String(), tc.want)
		}
	}
	if _, err := os.Stat(filepath.Join(notRun, results.MetaFile)); err == nil {
		t.Errorf("a refused --resume wrote %s", results.MetaFile)
	}
}

// A verdicts killed with SIGKILL part-way is completed by --resume: the
// rows written before the kill stay byte for byte, and summary.json then
// holds every cell and trial of an uninterrupted run, none twice. A
// different command line, or other server versions, are refused with one
// line that says what differs; --force takes the new command line and
// drops the rows of the cells it does not name.
func TestVerdictsResumeAfterSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("builds lockbench and starts Redis; skipped with -short")
	}
	bin := lockbenchBinary(t)
	out, tmp := filepath.Join(t.TempDir(), "verdicts"), t.TempDir()
	args := []string{"verdicts", "--strategy", "setnx,fencing", "--fault", "kill-node", "--trials", "2"}
	c := startChild(t, bin, tmp, append(args, "--out", out)...)
	c.waitForRows(t, out, "before it was killed")
	c.kill(t)
	before, err := os.ReadFile(filepath.Join(out, results.SummaryJSONFile))
	if err != nil {
		t.Fatal(err)
	}
	held := rowsOf(t, before)
	// setnx once (no token), fencing with the check off, on and strict:
	// 4 cells × 2 trials.
	const all = 8
	if len(held) == 0 || len(held) >= all {
		t.Fatalf("killed with %d rows written; want between 1 and %d", len(held), all-1)
	}

	// Refusals, before anything is run: another command line, and (on a
	// copy) servers of another version.
	// The resumptions run the same binary: a different build is refused.
	code, e := runBin(t, bin, tmp, "verdicts", "--strategy", "setnx", "--fault", "kill-node", "--trials", "2", "--resume", out)
	if code != 2 || !strings.Contains(e.String(), "--strategy setnx,fencing") || !strings.Contains(e.String(), "--force") {
		t.Errorf("another command line: exit %d, stderr %q; want 2 and one line naming the directory's command line", code, e.String())
	}
	other := filepath.Join(t.TempDir(), "copy")
	copyDir(t, out, other)
	editMeta(t, other, func(m *results.Meta) { m.Servers = map[string]string{"redis": "6.0.0"} })
	code, e = runBin(t, bin, tmp, append(args, "--resume", other)...)
	if code != 2 || !strings.Contains(e.String(), "redis 6.0.0 before") {
		t.Errorf("other servers: exit %d, stderr %q; want 2 and one line naming the server that differs", code, e.String())
	}

	if code, e = runBin(t, bin, tmp, append(args, "--resume", out)...); code != 0 {
		t.Fatalf("--resume: exit %d\n%s", code, e.String())
	}
	if !strings.Contains(e.String(), "holds "+strconv.Itoa(len(held))+" of the 8 fault runs") {
		t.Errorf("stderr:\n%s\nwant it to say it holds %d of the 8 runs", e.String(), len(held))
	}
	after, err := os.ReadFile(filepath.Join(out, results.SummaryJSONFile))
	if err != nil {
		t.Fatal(err)
	}
	rows := rowsOf(t, after)
	for i, r := range held {
		if i >= len(rows) || !bytes.Equal(rows[i], r) {
			t.Fatalf("row %d written before the kill changed:\nbefore %s\n after %s", i+1, r, rows[min(i, len(rows)-1)])
		}
	}
	var got []string
	for _, r := range rows {
		var s results.Summary
		if err := json.Unmarshal(r, &s); err != nil {
			t.Fatal(err)
		}
		got = append(got, s.ID())
	}
	sort.Strings(got)
	want := []string{
		"fencing.verdicts.kill-node.fenced", "fencing.verdicts.kill-node.fenced.trial2",
		"fencing.verdicts.kill-node.fencing_strict.fenced", "fencing.verdicts.kill-node.fencing_strict.fenced.trial2",
		"fencing.verdicts.kill-node.unfenced", "fencing.verdicts.kill-node.unfenced.trial2",
		"setnx.verdicts.kill-node.unfenced", "setnx.verdicts.kill-node.unfenced.trial2",
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("runs after --resume:\n%s\nwant every cell and trial once:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	meta := readMeta(t, out)
	if len(meta.Resumptions) != 1 || meta.Resumptions[0].RunsBefore != len(held) || meta.Resumptions[0].LoadAfter == nil {
		t.Errorf("meta.json resumptions %+v; want one, after %d runs, with the load after", meta.Resumptions, len(held))
	}
	for _, f := range []string{"report.md", "report.html", VerdictsMarkdownFile} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("%s after --resume: %v", f, err)
		}
	}

	// --force with setnx alone: fencing's rows go, and nothing is left to
	// run.
	if code, e = runBin(t, bin, tmp, "verdicts", "--strategy", "setnx", "--fault", "kill-node", "--trials", "2", "--resume", out, "--force"); code != 0 {
		t.Fatalf("--resume --force: exit %d\n%s", code, e.String())
	}
	if !strings.Contains(e.String(), "dropped 6 runs") || !strings.Contains(e.String(), "holds 2 of the 2 fault runs; running the other 0") {
		t.Errorf("--force stderr:\n%s\nwant it to say 6 runs were dropped and none run", e.String())
	}
	if ss := readSummaries(t, out); len(ss) != 2 {
		t.Errorf("%d rows after --force; want setnx's 2", len(ss))
	}
	if m := readMeta(t, out); len(m.Resumptions) != 2 || m.Resumptions[1].Dropped != 6 || !m.Resumptions[1].Forced {
		t.Errorf("meta.json resumptions %+v; want the second forced, 6 dropped", m.Resumptions)
	}
}

// rowsOf splits summary.json into its rows, each as written.
func rowsOf(t *testing.T, data []byte) []json.RawMessage {
	t.Helper()
	var rows []json.RawMessage
	if err := json.Unmarshal(data, &rows); err != nil {
		t.Fatalf("summary.json: %v", err)
	}
	return rows
}

func readMeta(t *testing.T, dir string) results.Meta {
	t.Helper()
	m, _, err := results.ReadDirData(dir)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func editMeta(t *testing.T, dir string, edit func(*results.Meta)) {
	t.Helper()
	m := readMeta(t, dir)
	edit(&m)
	if err := results.WriteMeta(dir, m); err != nil {
		t.Fatal(err)
	}
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	if out, err := exec.Command("cp", "-a", from, to).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v\n%s", err, out)
	}
}

// A matrix killed with SIGKILL part-way is completed by --resume: the
// rows written before stay byte for byte, no run is made twice, and the
// matrix ends with every part: the base scenario, the contention sweep,
// the rate sweep (up to where it stops, decided on the rows held too) and
// the fault cell.
func TestMatrixResumeAfterSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("builds lockbench and starts Redis; skipped with -short")
	}
	bin := lockbenchBinary(t)
	out, tmp := filepath.Join(t.TempDir(), "matrix"), t.TempDir()
	args := []string{"matrix", "--quick", "--strategy", "setnx", "--fault", "kill-node"}
	c := startChild(t, bin, tmp, append(args, "--out", out)...)
	c.waitForRows(t, out, "before it was killed")
	c.kill(t)
	before, err := os.ReadFile(filepath.Join(out, results.SummaryJSONFile))
	if err != nil {
		t.Fatal(err)
	}
	held := rowsOf(t, before)

	code, e := runBin(t, bin, tmp, append(args, "--resume", out)...)
	if code != 0 {
		t.Fatalf("--resume: exit %d\n%s", code, e.String())
	}
	after, err := os.ReadFile(filepath.Join(out, results.SummaryJSONFile))
	if err != nil {
		t.Fatal(err)
	}
	rows := rowsOf(t, after)
	for i, r := range held {
		if i >= len(rows) || !bytes.Equal(rows[i], r) {
			t.Fatalf("row %d written before the kill changed", i+1)
		}
	}
	seen := map[string]bool{}
	parts := map[string]int{}
	for _, r := range rows {
		var s results.Summary
		if err := json.Unmarshal(r, &s); err != nil {
			t.Fatal(err)
		}
		key := s.ID() + " " + strconv.Itoa(s.Params.Accounts) + " " + strconv.FormatFloat(s.Params.Rate, 'g', -1, 64)
		if seen[key] {
			t.Errorf("run %s twice", key)
		}
		seen[key] = true
		parts[s.Scenario]++
	}
	if parts["base"] != 1 || parts["contention"] != 3 || parts["sweep"] < 1 || parts["verdicts"] != 1 {
		t.Errorf("runs by scenario %v (held %d before the kill); want base 1, contention 3, sweep ≥ 1, verdicts 1\n%s", parts, len(held), e.String())
	}
}

// runBin runs the lockbench binary bin (3 minutes at most) with the
// environment of childEnv(tmp), and returns its exit code and stderr.
func runBin(t *testing.T, bin, tmp string, args ...string) (int, *bytes.Buffer) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = childEnv(tmp)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	return exitOf(cmd.Run()), &stderr
}
