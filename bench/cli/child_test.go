package cli

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/lockbench/lockbench/internal/syncbuf"
	"github.com/lockbench/lockbench/report"
)

// child is a lockbench command a test started, its stderr kept.
type child struct {
	cmd    *exec.Cmd
	stderr syncbuf.Buffer
	exited chan struct{} // closed once cmd has ended and err is set
	err    error         // what cmd.Wait returned
}

// startChild starts the lockbench binary bin with args and the
// environment of childEnv(tmp). Should it still run when the test ends,
// it is killed (by its pid) and reaped.
func startChild(t *testing.T, bin, tmp string, args ...string) *child {
	t.Helper()
	c := &child{cmd: exec.Command(bin, args...), exited: make(chan struct{})}
	c.cmd.Env = childEnv(tmp)
	c.cmd.Stderr = &c.stderr
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { c.err = c.cmd.Wait(); close(c.exited) }()
	t.Cleanup(func() {
		select {
		case <-c.exited:
			return
		default:
		}
		_ = c.cmd.Process.Kill()
		select {
		case <-c.exited:
		case <-time.After(10 * time.Second):
			t.Errorf("lockbench (pid %d) not reaped 10 s after SIGKILL", c.cmd.Process.Pid)
		}
	})
	return c
}

// signal sends sig to the child; failing to fails the test.
func (c *child) signal(t *testing.T, sig os.Signal) {
	t.Helper()
	if err := c.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("sending %v: %v; stderr:\n%s", sig, err, c.stderr.String())
	}
}

// kill kills the child with SIGKILL and waits for its end.
func (c *child) kill(t *testing.T) {
	t.Helper()
	c.signal(t, syscall.SIGKILL)
	<-c.exited
}

// wait returns the child's end (cmd.Wait's error). Should it still run
// limit later, it is killed and the test fails, saying what it ran on
// after and with its stderr.
func (c *child) wait(t *testing.T, limit time.Duration, after string) error {
	t.Helper()
	select {
	case <-c.exited:
		return c.err
	case <-time.After(limit):
		_ = c.cmd.Process.Kill()
		t.Fatalf("still running %v after %s; stderr:\n%s", limit, after, c.stderr.String())
		return nil
	}
}

// waitFor calls ok every 50 ms (3 minutes at most) until it holds, while
// the child runs. The child's end first fails the test, saying what it
// came before; so do the 3 minutes, after killing the child, with
// missing formatted with args (at that moment) saying what did not come.
func (c *child) waitFor(t *testing.T, before string, ok func() bool, missing string, args ...any) {
	t.Helper()
	deadline := time.After(3 * time.Minute)
	for {
		select {
		case <-c.exited:
			t.Fatalf("ended (%v) %s; stderr:\n%s", c.err, before, c.stderr.String())
		case <-deadline:
			_ = c.cmd.Process.Kill()
			t.Fatalf("%s after 3 minutes; stderr:\n%s", fmt.Sprintf(missing, args...), c.stderr.String())
		case <-time.After(50 * time.Millisecond):
		}
		if ok() {
			return
		}
	}
}

// waitForRows waits (3 minutes at most) until the run directory out of
// the child holds a row in summary.json, and returns how many; the
// child's end before that fails the test, saying what it came before.
func (c *child) waitForRows(t *testing.T, out, before string) int {
	t.Helper()
	var rows int
	c.waitFor(t, before, func() bool {
		ss, _, err := report.ReadSummaries(out)
		rows = len(ss)
		return err == nil && rows > 0
	}, "no row in summary.json")
	return rows
}
