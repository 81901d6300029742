package cli

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockbench/lockbench/strategies/adapter/adaptertest"
)

// Ctrl-C during a run of the four shipped adapters (one after another, in
// instance processes) exits 130 and leaves none of the node and python3
// processes the run started, those of the strategies already run
// included.
func TestInterruptLeavesNoAdapter(t *testing.T) {
	if testing.Short() {
		t.Skip("builds lockbench and starts Redis ×5 and ZooKeeper; skipped with -short")
	}
	for _, rt := range []string{"node", "/usr/bin/python3"} {
		if _, err := exec.LookPath(rt); err != nil {
			t.Skipf("%s is not installed (make deps)", rt)
		}
	}
	bin := lockbenchBinary(t)
	tmp := t.TempDir()
	c := startChild(t, bin, tmp, "run", "--strategy", "node-redlock,node-redis-semaphore,py-redis-lock,py-kazoo",
		"--instance-mode", "process", "--duration", "3s", "--rate", "100", "--out", filepath.Join(t.TempDir(), "run"))
	seen := map[string]bool{}
	c.waitFor(t, "before py-kazoo's adapter ran", func() bool {
		for _, p := range adaptersOf(tmp) {
			for _, name := range []string{"node-redlock", "node-redis-semaphore", "py_redis_lock", "py_kazoo"} {
				if strings.Contains(p, name) {
					seen[name] = true
				}
			}
		}
		return seen["py_kazoo"]
	}, "no py-kazoo adapter (saw %v)", seen)
	time.Sleep(500 * time.Millisecond) // under load
	c.signal(t, os.Interrupt)
	err := c.wait(t, 30*time.Second, "SIGINT")
	if code := exitOf(err); code != 130 {
		t.Fatalf("exit %d (%v); want 130. stderr:\n%s", code, err, c.stderr.String())
	}
	if len(seen) != 4 {
		t.Errorf("adapters seen running: %v; want all four", seen)
	}
	time.Sleep(300 * time.Millisecond) // a Pdeathsig is delivered
	if left := adaptersOf(tmp); len(left) > 0 {
		t.Errorf("left running after Ctrl-C: %v; want none", left)
	}
}

// adaptersOf lists the node and python3 processes (pid and command line)
// started by a lockbench child whose TMPDIR is tmp (they inherit it).
func adaptersOf(tmp string) []string {
	var out []string
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		comm, err := os.ReadFile(filepath.Join(d, "comm"))
		if err != nil {
			continue
		}
		if c := strings.TrimSpace(string(comm)); c != "node" && !strings.HasPrefix(c, "python3") {
			continue
		}
		env, err := os.ReadFile(filepath.Join(d, "environ"))
		if err != nil || !bytes.Contains(env, []byte("\x00TMPDIR="+tmp+"\x00")) && !bytes.HasPrefix(env, []byte("TMPDIR="+tmp+"\x00")) {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join(d, "cmdline"))
		pid, _ := strconv.Atoi(filepath.Base(d))
		out = append(out, strconv.Itoa(pid)+" "+strings.ReplaceAll(string(cmdline), "\x00", " "))
	}
	return out
}

// SIGTERM to lockbench's whole process group, as `timeout` sends it,
// stops the adapter with lockbench: the deliveries it cut short are
// interrupted, not adapter_lost, and the run exits 130 with its partial
// results. For a Go test adapter, and for java-curator, whose JVM would
// catch the signal and exit 143 were it not started with -Xrs.
func TestGroupSIGTERMIsNoAdapterLoss(t *testing.T) {
	if testing.Short() {
		t.Skip("builds lockbench and starts Redis and ZooKeeper; skipped with -short")
	}
	bin := lockbenchBinary(t)
	// settle: how long the run goes on once the three instances'
	// adapters have started (a JVM takes its time to start, connect and
	// pass the probe, the more so under load).
	for _, tc := range []struct {
		name, strategy string
		settle         time.Duration
	}{
		{"exec", "exec:" + adapterScript(t, adaptertest.Blocking), 1500 * time.Millisecond},
		{"java-curator", "java-curator", 8 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "java-curator" {
				if _, err := os.Stat("/usr/bin/java"); err != nil {
					t.Skip("/usr/bin/java is not installed (make deps)")
				}
			}
			testGroupSIGTERM(t, bin, tc.strategy, tc.settle)
		})
	}
}

func testGroupSIGTERM(t *testing.T, bin, strategy string, settle time.Duration) {
	tmp, out := t.TempDir(), filepath.Join(t.TempDir(), "run")
	cmd := exec.Command(bin, "run", "--strategy", strategy, "--instances", "3",
		"--duration", "20s", "--rate", "200", "--out", out)
	cmd.Env = childEnv(tmp)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // a group of its own, as timeout makes
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	defer func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }()
	deadline := time.Now().Add(time.Minute)
	for adapterLogs(out) < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("%d of the 3 instances' adapters running after a minute; stderr:\n%s", adapterLogs(out), stderr.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(settle)
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	var err error
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("lockbench still running 30 s after SIGTERM; stderr:\n%s", stderr.String())
	}
	if code := exitOf(err); code != 130 {
		t.Fatalf("exit %d (%v); want 130. stderr:\n%s", code, err, stderr.String())
	}
	ss := readSummaries(t, out)
	if len(ss) != 1 || !ss[0].Interrupted {
		t.Fatalf("summary.json: %d rows; want the interrupted run's", len(ss))
	}
	if n := ss[0].Errors["adapter_lost"]; n != 0 || strings.Contains(stderr.String(), "adapter_lost") {
		t.Errorf("%d deliveries adapter_lost (stderr %q); want none: the adapter stopped with lockbench", n, stderr.String())
	}
	if ss[0].Processed == 0 {
		t.Errorf("no payment processed before the SIGTERM; the test proves nothing")
	}
}

// adapterLogs is how many adapters' logs the run directory out has.
func adapterLogs(out string) int {
	found, _ := filepath.Glob(filepath.Join(out, "adapters", "*"))
	return len(found)
}
