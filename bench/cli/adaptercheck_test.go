package cli

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockbench/lockbench/internal/syncbuf"
	"github.com/lockbench/lockbench/results"
	"github.com/lockbench/lockbench/strategies/adapter"
	"github.com/lockbench/lockbench/strategies/adapter/adaptertest"
)

// adapterScript writes an executable that runs the test binary as the test
// adapter of mode: a path and no environment of its own, as a team's
// adapter is given to exec: and adapter-check.
func adapterScript(t *testing.T, mode string) string {
	t.Helper()
	path, env := adaptertest.Command(mode)
	p := filepath.Join(t.TempDir(), mode+".sh")
	if err := os.WriteFile(p, []byte("#!/bin/sh\nexec env "+env[0]+" "+path+" \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// adapter-check on a working adapter (a Go one on a real Redis that
// adapter-check starts): one line per case, every lock case passes
// (tokens and extend included, which it claims), exit 0.
func TestAdapterCheck(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Redis and runs the conformance cases; run without -short")
	}
	code, stdout, stderr := runCLI("adapter-check", adapterScript(t, adaptertest.Good))
	if code != 0 {
		t.Fatalf("adapter-check: exit %d; want 0\n%s%s", code, stdout, stderr)
	}
	for _, want := range []string{"PASS  lease", "PASS  exclusion-per-contender", "PASS  stale-release-after-expiry", "PASS  expiry",
		"PASS  cancel", "PASS  fencing-order", "PASS  extend", "PASS  server-down", "exec:go-test-good: every case passed"} {
		if !strings.Contains(stdout, want+"\n") {
			t.Errorf("adapter-check output lacks %q:\n%s", want, stdout)
		}
	}
}

// The documented example adapters pass adapter-check (make test runs this).
func TestAdapterCheckExamples(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Redis and runs the conformance cases; run without -short")
	}
	for _, ex := range []struct{ runtime, script string }{
		{adapter.Python, "example_lock.py"},
		{"node", "example_lock.js"},
	} {
		t.Run(ex.script, func(t *testing.T) {
			if _, err := exec.LookPath(ex.runtime); err != nil {
				t.Skipf("%s is not installed", ex.runtime)
			}
			script := filepath.Join("..", "..", "adapters", "examples", ex.script)
			code, stdout, stderr := runCLI("adapter-check", ex.runtime, script)
			if code != 0 {
				t.Fatalf("adapter-check %s: exit %d; want 0\n%s%s", ex.script, code, stdout, stderr)
			}
		})
	}
}

// Three broken adapters: each is one line on stderr naming the adapter and
// what went wrong, within 5s of its hello being due, and exit 1, from
// adapter-check and from run --strategy exec:….
func TestAdapterBroken(t *testing.T) {
	for _, tc := range []struct{ mode, want string }{
		// Exits at once.
		{adaptertest.Exit, "--hello failed (exit status 3)"},
		// Prints garbage.
		{adaptertest.Garbage, `--hello: printed "garbage, not json", not a hello`},
		// Never answers.
		{adaptertest.NoHello, "--hello printed nothing within 5s"},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			script := adapterScript(t, tc.mode)
			for _, args := range [][]string{
				{"adapter-check", script},
				{"run", "--strategy", "exec:" + script, "--payments", "10", "--out", t.TempDir()},
			} {
				t0 := time.Now()
				code, _, stderr := runCLI(args...)
				took := time.Since(t0)
				line := "lockbench: adapter " + script + ": " + tc.want
				if code != 1 || !strings.HasPrefix(stderr, line) || strings.Count(stderr, "\n") != 1 {
					t.Errorf("%s: exit %d, stderr %q; want exit 1 and the one line %q", args[0], code, stderr, line)
				}
				if took > 6*time.Second {
					t.Errorf("%s: took %v; want within 5s of the hello being due", args[0], took)
				}
			}
		})
	}
	// Bad input: no PATH, or a comma in the arguments.
	for _, args := range [][]string{{"adapter-check"}, {"adapter-check", "./a", "b,c"}} {
		if code, _, stderr := runCLI(args...); code != 2 || !strings.Contains(stderr, "adapter-check") {
			t.Errorf("%q: exit %d, %q; want exit 2 naming adapter-check", args, code, stderr)
		}
	}
}

// An adapter that stops answering mid-run (it answers New's probe only)
// does not hang the run: 5s after a request's deadline it is lost, with
// one line naming it, and the instance's later deliveries count as
// adapter_lost in summary.json. No delivery got an answer from the lock:
// the run is unknown, not safe, at 0 payments/s, and exits 1 naming the
// strategy.
func TestAdapterLostInRun(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Redis; run without -short")
	}
	out := t.TempDir()
	lostLog := captureLostLog(t)
	t0 := time.Now()
	code, _, stderr := runCLI("run", "--strategy", "exec:"+adapterScript(t, adaptertest.Stall), "--instances", "1",
		"--payments", "2000", "--acquire-timeout", "300ms", "--out", out)
	if code != 1 || time.Since(t0) > time.Minute || !strings.Contains(stderr, "exec:go-test-stall: no verdict in any run, the strategy broke: no answer from the lock") {
		t.Fatalf("run: exit %d after %v; want 1 within a minute, naming the strategy and the cause\n%s", code, time.Since(t0), stderr)
	}
	if n := strings.Count(lostLog.String(), "lockbench: adapter "); n != 1 || !strings.Contains(lostLog.String(), "did not answer acquire within 5s after its deadline") {
		t.Errorf("stderr: %q; want one line on the lost adapter", lostLog.String())
	}
	ss := readSummaries(t, out)
	if len(ss) != 1 || ss[0].Errors["adapter_lost"] == 0 {
		t.Fatalf("summary.json: %+v; want one row whose deliveries after the loss count as adapter_lost", ss)
	}
	if s := ss[0]; s.Verdict != results.VerdictUnknown || s.PaymentsPerSec != 0 {
		t.Errorf("verdict %q at %.1f payments/s (%d processed of %d); want unknown at 0", s.Verdict, s.PaymentsPerSec, s.Processed, s.Payments)
	}
}

// An adapter that prints a line of its own on stdout at its first acquire
// (a debug log, as an adapter written from the docs may) is lost there:
// its run is unknown, at 0 payments/s, and exits 1; never SAFE.
func TestAdapterChattyIsUnknown(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Redis; run without -short")
	}
	out := t.TempDir()
	captureLostLog(t)
	code, stdout, stderr := runCLI("run", "--strategy", "exec:"+adapterScript(t, adaptertest.Chatty), "--payments", "300", "--out", out)
	if code != 1 || !strings.Contains(stderr, "exec:go-test-chatty: no verdict in any run") {
		t.Fatalf("run: exit %d; want 1 naming the strategy\n%s", code, stderr)
	}
	if !strings.Contains(stdout, "UNKNOWN") || strings.Contains(stdout, "SAFE") {
		t.Errorf("table:\n%s\nwant the row UNKNOWN, nowhere SAFE", stdout)
	}
	ss := readSummaries(t, out)
	if len(ss) != 1 || ss[0].Verdict != results.VerdictUnknown || ss[0].PaymentsPerSec != 0 || ss[0].Unsafe {
		t.Fatalf("summary.json: %+v; want one row, verdict unknown, 0 payments/s", ss)
	}
}

// An adapter that prints its debug line at every acquire, New's probe
// too, is lost before the first payment: its run is still a row, unknown
// at 0 payments/s with the probe's adapter_lost, and the command exits 1
// naming the strategy and the cause. So with goroutine instances and
// with processes (of the lockbench binary, which runs the adapter's
// instances), whose error crosses a pipe.
func TestAdapterBrokenAtStartIsUnknown(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Redis; run without -short")
	}
	script := adapterScript(t, adaptertest.ChattyAll)
	for _, mode := range []string{"goroutine", "process"} {
		t.Run(mode, func(t *testing.T) {
			out := t.TempDir()
			captureLostLog(t)
			args := []string{"run", "--strategy", "exec:" + script, "--instance-mode", mode, "--payments", "300", "--history", "--out", out}
			code, stdout, stderr := runCLI(args...)
			if mode == "process" {
				code, stdout, stderr = runBinary(t, args...)
			}
			want := "exec:go-test-chatty-all: no verdict in any run, the strategy broke: before its first payment: "
			if code != 1 || !strings.Contains(stderr, want) || !strings.Contains(stderr, "not a protocol line") {
				t.Fatalf("run: exit %d; want 1 with %q and the cause\n%s", code, want, stderr)
			}
			if !strings.Contains(stdout, "UNKNOWN") || strings.Contains(stdout, "SAFE") {
				t.Errorf("table:\n%s\nwant the row UNKNOWN, nowhere SAFE", stdout)
			}
			ss := readSummaries(t, out)
			if len(ss) != 1 {
				t.Fatalf("summary.json: %d rows; want 1", len(ss))
			}
			s := ss[0]
			if s.Verdict != results.VerdictUnknown || s.PaymentsPerSec != 0 || s.Availability != 0 || s.Errors["adapter_lost"] != 1 ||
				!strings.HasPrefix(s.Unjudged, results.BrokeAtStart+": ") {
				t.Errorf("row: verdict %q, %.1f payments/s, availability %v, errors %v, unjudged %q; want unknown at 0, availability 0, adapter_lost 1, why",
					s.Verdict, s.PaymentsPerSec, s.Availability, s.Errors, s.Unjudged)
			}
		})
	}
}

// runBinary runs the lockbench binary with args, bounded at 2 minutes,
// and returns its exit code and output.
func runBinary(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, lockbenchBinary(t), args...)
	var o, e strings.Builder
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatalf("lockbench %s: %v", strings.Join(args, " "), err)
	}
	return code, o.String(), e.String()
}

// captureLostLog sends a lost adapter's line, which goes to the process's
// stderr (an instance process passes its own on), to a buffer for the
// test: with goroutine instances, the test's own process.
func captureLostLog(t *testing.T) *syncbuf.Buffer {
	var b syncbuf.Buffer
	adapter.LostLog = &b
	t.Cleanup(func() { adapter.LostLog = os.Stderr })
	return &b
}
