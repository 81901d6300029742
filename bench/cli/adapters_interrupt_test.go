package cli

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
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
