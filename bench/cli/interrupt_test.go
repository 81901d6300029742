package cli

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockbench/lockbench/report"
)

// lockbenchBinary is a lockbench binary for tests that run it as a child
// process: the one `make test` builds (LOCKBENCH_ETCD_BIN names it), or
// one built here.
func lockbenchBinary(t *testing.T) string {
	t.Helper()
	if bin := os.Getenv("LOCKBENCH_ETCD_BIN"); bin != "" {
		if _, err := os.Stat(bin); err == nil {
			return bin
		}
	}
	bin := filepath.Join(t.TempDir(), "lockbench")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/lockbench/lockbench/cmd/lockbench").CombinedOutput(); err != nil {
		t.Fatalf("building lockbench: %v\n%s", err, out)
	}
	return bin
}

// childEnv is the environment of a lockbench child: ours, with TMPDIR tmp
// and without the variables that would point it at existing servers.
func childEnv(tmp string) []string {
	env := []string{"TMPDIR=" + tmp}
	for _, kv := range os.Environ() {
		switch {
		case strings.HasPrefix(kv, "TMPDIR="):
		case strings.HasPrefix(kv, "LOCKBENCH_") && !strings.HasPrefix(kv, "LOCKBENCH_ETCD_BIN="):
		default:
			env = append(env, kv)
		}
	}
	return env
}

// waitForServers waits until a lockbench child has started its servers
// in tmp (a temporary directory with redis-0 in it).
func waitForServers(t *testing.T, tmp string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if m, _ := filepath.Glob(filepath.Join(tmp, "lockbench-*", "redis-0", "server.log")); len(m) > 0 {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("the child started no Redis within 30s")
}

// Ctrl-C in the middle of a run: the command exits 130, keeps the partial
// run (summary.json, marked interrupted) and starts no other (mutex's),
// names the run directory on stderr, and stops and removes the servers it
// started.
func TestInterruptedRunExits130(t *testing.T) {
	if testing.Short() {
		t.Skip("builds lockbench and starts Redis; skipped with -short")
	}
	bin := lockbenchBinary(t)
	tmp, out := t.TempDir(), filepath.Join(t.TempDir(), "run")
	c := startChild(t, bin, tmp, "run", "--strategy", "setnx,mutex", "--duration", "30s", "--rate", "200", "--out", out)
	waitForServers(t, tmp)
	time.Sleep(1500 * time.Millisecond) // the load is under way
	c.signal(t, os.Interrupt)
	err := c.wait(t, 30*time.Second, "SIGINT")
	stderr := c.stderr.String()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Fatalf("exit: %v; want exit status 130. stderr:\n%s", err, stderr)
	}
	ss, _, rerr := report.ReadSummaries(out)
	if rerr != nil || len(ss) != 1 || !ss[0].Interrupted {
		t.Errorf("summary.json: %d rows, err %v; want the one partial run, marked interrupted", len(ss), rerr)
	}
	if want := "interrupted: partial results in " + out; !strings.Contains(stderr, want) {
		t.Errorf("stderr:\n%s\nwant a line %q", stderr, want)
	}
	if left, _ := filepath.Glob(filepath.Join(tmp, "lockbench-*")); len(left) > 0 {
		t.Errorf("left in TMPDIR after the interrupted run: %v; want nothing", left)
	}
}

// A run killed with SIGKILL cannot remove its servers' temporary
// directory; the next lockbench command of any kind does, here one that
// starts no server.
func TestKilledRunsTempDirIsRemovedByTheNext(t *testing.T) {
	if testing.Short() {
		t.Skip("builds lockbench and starts Redis; skipped with -short")
	}
	bin := lockbenchBinary(t)
	tmp := t.TempDir()
	killed := startChild(t, bin, tmp, "run", "--strategy", "setnx,mutex", "--duration", "30s", "--rate", "100", "--out", filepath.Join(t.TempDir(), "killed"))
	waitForServers(t, tmp)
	killed.kill(t)
	stale, _ := filepath.Glob(filepath.Join(tmp, "lockbench-*"))
	if len(stale) != 1 {
		t.Fatalf("after SIGKILL, TMPDIR holds %v; want the killed run's directory", stale)
	}
	// Its redis-server dies with it (Pdeathsig); give it a moment.
	time.Sleep(200 * time.Millisecond)

	next := exec.Command(bin, "strategies")
	next.Env = childEnv(tmp)
	if b, err := next.CombinedOutput(); err != nil {
		t.Fatalf("next command: %v\n%s", err, b)
	}
	if _, err := os.Stat(stale[0]); !os.IsNotExist(err) {
		t.Errorf("%s after the next run: %v; want it removed", stale[0], err)
	}
	if left, _ := filepath.Glob(filepath.Join(tmp, "lockbench-*")); len(left) > 0 {
		t.Errorf("left in TMPDIR: %v; want nothing", left)
	}
}

// Ctrl-C in the middle of a verdicts run is said once, in one line: the
// runs it cut short are not reported as failures besides.
func TestInterruptedVerdictsSaidOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("builds lockbench and starts Redis; skipped with -short")
	}
	bin := lockbenchBinary(t)
	tmp, out := t.TempDir(), filepath.Join(t.TempDir(), "verdicts")
	c := startChild(t, bin, tmp, "verdicts", "--strategy", "setnx,fencing", "--fault", "none,pause", "--trials", "3", "--out", out)
	c.waitForRows(t, out, "before it was interrupted")
	time.Sleep(300 * time.Millisecond) // the next run is under way
	c.signal(t, os.Interrupt)
	err := c.wait(t, 60*time.Second, "SIGINT")
	stderr := c.stderr.String()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Fatalf("exit: %v; want exit status 130. stderr:\n%s", err, stderr)
	}
	said := 0
	for _, l := range strings.Split(stderr, "\n") {
		if strings.Contains(l, "failed") || strings.Contains(l, "context canceled") || strings.Contains(l, "error:") {
			t.Errorf("stderr line %q: the interruption reported as a failure", l)
		}
		if strings.Contains(l, "interrupted") {
			said++
		}
	}
	if said != 1 {
		t.Errorf("stderr says interrupted %d times; want once:\n%s", said, stderr)
	}
}
