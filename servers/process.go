package servers

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/user"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

const (
	// stopGrace is how long Stop waits after the polite signal before it
	// sends SIGKILL.
	stopGrace = 5 * time.Second
	// groupGoneTimeout bounds the wait for the rest of a killed server's
	// process group (postgres backends) to disappear.
	groupGoneTimeout = 3 * time.Second
	// pipeWaitDelay bounds how long reaping a child waits for its output pipe
	// to drain (only used when Options.Log is set).
	pipeWaitDelay = time.Second
	// logTailBytes and logTailLines bound the log excerpt in a StartError.
	logTailBytes = 8 << 10
	logTailLines = 20
)

// proc is one running (or exited) child process.
type proc struct {
	pid  int
	done chan struct{} // closed once the process has been reaped
	err  error         // Wait's result; read only after done is closed
}

// spawnCalls feeds the spawner goroutine.
var (
	spawnOnce  sync.Once
	spawnCalls chan spawnCall
)

type spawnCall struct {
	cmd *exec.Cmd
	err chan error
}

// spawn starts cmd from one OS thread that lives as long as the process.
//
// Pdeathsig is delivered when the *thread* that forked the child exits, not
// the process (golang/go#27505). Go may retire threads, so a child forked
// from an arbitrary goroutine could be killed while lockbench runs on. The
// spawner goroutine locks itself to its thread and never returns, so that
// thread, and with it every child's lifeline, lasts until the process dies.
func spawn(cmd *exec.Cmd) error {
	spawnOnce.Do(func() {
		spawnCalls = make(chan spawnCall)
		go func() {
			runtime.LockOSThread() // never unlocked: see above
			for c := range spawnCalls {
				c.err <- c.cmd.Start()
			}
		}()
	})
	c := spawnCall{cmd: cmd, err: make(chan error, 1)}
	spawnCalls <- c
	return <-c.err
}

// launch starts cmd in its own process group, tied to our life with
// Pdeathsig, its output appended to logPath (and copied to log, if not nil).
func launch(cmd *exec.Cmd, logPath string, log io.Writer) (*proc, error) {
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	var out io.Writer = f
	if log != nil {
		out = io.MultiWriter(f, log)
		cmd.WaitDelay = pipeWaitDelay
	}
	cmd.Stdout, cmd.Stderr = out, out
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	if err := spawn(cmd); err != nil {
		f.Close()
		return nil, err
	}
	p := &proc{pid: cmd.Process.Pid, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		f.Close()
		close(p.done)
	}()
	return p, nil
}

// exited reports whether the process has been reaped.
func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// kill SIGKILLs the whole process group and waits until it is gone.
func (p *proc) kill() error {
	// Children that left the group (postgres backends call setsid) die too:
	// a backend outliving a killed postmaster would still answer queries.
	kids := descendants(p.pid)
	for _, c := range kids {
		_ = syscall.Kill(c, syscall.SIGKILL)
	}
	err := syscall.Kill(-p.pid, syscall.SIGKILL)
	<-p.done
	p.waitGroupGone()
	waitGone(kids)
	if errors.Is(err, syscall.ESRCH) {
		err = nil
	}
	return err
}

// terminate sends sig to the group leader (so it can shut its own children
// down cleanly), waits up to grace, then SIGKILLs the group.
func (p *proc) terminate(sig syscall.Signal, grace time.Duration) {
	_ = syscall.Kill(p.pid, sig)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-p.done:
	case <-t.C:
	}
	_ = p.kill() // leftovers in the group, if any
}

// waitGroupGone waits (bounded) until no process is left in the group, so a
// restarted server does not meet its predecessor's children (a postgres
// backend still attached to the old shared memory makes postgres refuse to
// start).
func (p *proc) waitGroupGone() {
	deadline := time.Now().Add(groupGoneTimeout)
	for time.Now().Before(deadline) {
		if err := syscall.Kill(-p.pid, 0); errors.Is(err, syscall.ESRCH) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitGone waits (bounded by groupGoneTimeout) until every pid in pids has
// exited: gone, or a zombie (which has let go of its memory, shared memory
// included). A backend that left the group still holds the old shared
// memory until then, and a restarted postgres refuses to start beside it.
func waitGone(pids []int) {
	deadline := time.Now().Add(groupGoneTimeout)
	for _, pid := range pids {
		for time.Now().Before(deadline) {
			b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
			if err != nil {
				break // gone
			}
			// The state follows the command name in parentheses.
			if i := bytes.LastIndexByte(b, ')'); i >= 0 && i+2 < len(b) && b[i+2] == 'Z' {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
}

// prefixWriter copies a child's output to a shared writer, one prefixed line
// at a time. All prefixWriters of a cluster share mu, so lines of different
// servers do not interleave within a Write. Errors are swallowed: a broken
// Options.Log must not stop the server's own log file (io.MultiWriter stops
// at the first error).
type prefixWriter struct {
	mu      *sync.Mutex
	w       io.Writer
	prefix  []byte
	midLine bool
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := len(b)
	for len(b) > 0 {
		if !p.midLine {
			_, _ = p.w.Write(p.prefix)
		}
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			_, _ = p.w.Write(b)
			p.midLine = true
			break
		}
		_, _ = p.w.Write(b[:i+1])
		p.midLine = false
		b = b[i+1:]
	}
	return n, nil
}

// logTail returns the last lines of the file at path ("" if unreadable).
func logTail(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return ""
	}
	off := max(st.Size()-logTailBytes, 0)
	buf := make([]byte, st.Size()-off)
	n, _ := f.ReadAt(buf, off)
	lines := strings.Split(strings.TrimRight(string(buf[:n]), "\n"), "\n")
	if off > 0 && len(lines) > 1 {
		lines = lines[1:] // the first line is probably cut
	}
	if len(lines) > logTailLines {
		lines = lines[len(lines)-logTailLines:]
	}
	return strings.Join(lines, "\n")
}

// childEnv returns our environment without the variables that configure
// this package's own children or preload libraries, plus extra.
func childEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "LOCKBENCH_CHILD") || k == "LD_PRELOAD" || strings.HasPrefix(k, "FAKETIME") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, extra...)
}

// descendants lists pid's children, grandchildren and so on, from /proc.
func descendants(pid int) []int {
	var out []int
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", p, p))
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if c, err := strconv.Atoi(f); err == nil {
				out = append(out, c)
				queue = append(queue, c)
			}
		}
	}
	return out
}

// runAs is the credential a server that refuses root (PostgreSQL,
// mariadbd) runs with when lockbench runs as root: the OS user name's,
// with clusterDir made traversable (not listable) and paths handed to
// that user. It is nil when lockbench does not run as root; server names
// the server in the error.
func runAs(server, name, clusterDir string, paths ...string) (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup(name)
	if err != nil {
		return nil, fmt.Errorf("%s does not run as root and there is no %q user to run it as: %w", server, name, err)
	}
	uid, err := strconv.Atoi(u.Uid)
	if err != nil {
		return nil, err
	}
	gid, err := strconv.Atoi(u.Gid)
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(clusterDir, 0o711); err != nil {
		return nil, err
	}
	for _, p := range paths {
		if err := os.Chown(p, uid, gid); err != nil {
			return nil, err
		}
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}
