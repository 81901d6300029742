// Starting instance processes: the Proc, Pauser, Spawner and Placement
// interfaces, an instance process's command (ChildCommand, with its
// standard error filtered), and localProc, a child of this process.

package loadgen

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	"github.com/lockbench/lockbench/loadgen/store"
)

// Proc is an instance process as its coordinator drives it: a child of
// this process, or one on an agent (a Spawner's). Its stdin takes the
// delivery records, its stdout gives the reports.
type Proc interface {
	Pauser
	Stdin() io.WriteCloser
	Stdout() io.Reader
	// Kill ends the process now.
	Kill()
	// Wait reaps the process once its stdout has ended.
	Wait() error
	// ClockOffsetNs is the process's clock minus the coordinator's: each
	// delivery's intended start is shifted by it, so that latency
	// measured on the process's host is against the intended time.
	ClockOffsetNs() int64
	// Lost is closed if the process's host is lost (its agent stopped
	// answering); nil for a local process.
	Lost() <-chan struct{}
}

// Pauser is implemented by instances that are processes, local or on an
// agent: a fault stops one whole (SIGSTOP; an agent signals its own child)
// and continues it (SIGCONT).
type Pauser interface {
	// Pause stops the process, and returns once it has been signalled.
	Pause() error
	// Resume continues it.
	Resume() error
	// Process names it for a fault's timeline: "pid 1234", "agent
	// 10.0.0.2:7070".
	Process() string
}

// Spawner starts instance processes elsewhere than as children of this
// process: on agents (package loadgen/agent's Pool).
type Spawner interface {
	// Place serves st to the processes of one run (with o, and the
	// token they present), until the Placement is closed.
	Place(st store.Store, o store.ServeOptions) (Placement, error)
}

// Placement is where one run's instance processes go.
type Placement interface {
	// Spawn starts instance id of n; conf makes its configuration from
	// the address at which it reaches the store.
	Spawn(ctx context.Context, id, n int, conf func(storeAddr string) ([]byte, error)) (Proc, error)
	// Close stops serving the store.
	Close() error
}

// ChildCommand is the command of an instance process with conf: exe
// re-executed as an instance, in its own process group (Ctrl-C reaches
// the coordinator or agent, which stops the instances in order), killed
// if its parent dies, its standard error written to stderr; with procs >
// 0 its GOMAXPROCS, unless the environment sets one; and its runtime's
// monitor kept out of its deep sleep (childGODEBUG).
func ChildCommand(exe string, conf []byte, procs int, stderr io.Writer) *exec.Cmd {
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), envChild+"="+childName, envInstance+"="+string(conf))
	if procs > 0 && os.Getenv("GOMAXPROCS") == "" {
		cmd.Env = append(cmd.Env, "GOMAXPROCS="+strconv.Itoa(procs))
	}
	cmd.Stderr = stderr
	if v, ours := childGODEBUG(os.Getenv("GODEBUG")); ours {
		cmd.Env = append(cmd.Env, "GODEBUG="+v)
		cmd.Stderr = &schedTraceFilter{w: stderr}
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	return cmd
}

// SignalGroup sends sig to the process group of an instance process pid
// (ChildCommand puts each in its own): the process and whatever it started
// that stayed in its group, such as an adapter (strategies/adapter), stop
// and continue together.
func SignalGroup(pid int, sig syscall.Signal) error {
	return syscall.Kill(-pid, sig)
}

// childSchedTrace is the schedtrace GODEBUG setting of instance
// processes: the longest period it takes (2³¹−1 ms, 24.8 days). With it the
// runtime's monitor (sysmon) never takes the deep sleep whose wake-ups cost
// an often-idle instance process context switches and CPU ("Instance
// processes and schedtrace" in the package doc). schedTraceFilter drops
// the "SCHED …" lines the runtime then writes to standard error.
const childSchedTrace = "schedtrace=2147483647"

// childGODEBUG is the GODEBUG of an instance process whose parent has
// parent: parent with childSchedTrace added, and true; or parent as it
// is, and false, when it sets schedtrace itself (its trace is then
// wanted, and passed on whole).
func childGODEBUG(parent string) (string, bool) {
	for _, kv := range strings.Split(parent, ",") {
		if strings.HasPrefix(strings.TrimSpace(kv), "schedtrace=") {
			return parent, false
		}
	}
	if parent == "" {
		return childSchedTrace, true
	}
	return parent + "," + childSchedTrace, true
}

// schedTraceFilter passes an instance process's standard error on to w
// less the runtime's "SCHED …" trace lines (childSchedTrace). A line is
// passed on as soon as it cannot be one (a partial line too, once its
// start differs), so that nothing the instance reports waits for a
// newline; what could still become a trace line is held until it is
// decided.
type schedTraceFilter struct {
	w       io.Writer
	held    []byte // the start of a line, a prefix of "SCHED "
	inTrace bool   // within a trace line, until its newline
	inLine  bool   // within a line passed on, until its newline
}

const schedTracePrefix = "SCHED "

func (f *schedTraceFilter) Write(b []byte) (int, error) {
	n := len(b)
	var out []byte
	for len(b) > 0 {
		if f.inTrace {
			i := bytes.IndexByte(b, '\n')
			if i < 0 {
				break
			}
			f.inTrace, b = false, b[i+1:]
			continue
		}
		line := b // to its newline, if b has one
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line = b[:i+1]
		}
		if f.inLine {
			out, b = append(out, line...), b[len(line):]
			f.inLine = line[len(line)-1] != '\n'
			continue
		}
		take := line[:min(len(line), len(schedTracePrefix)-len(f.held))]
		start := append(f.held, take...)
		if string(start) == schedTracePrefix {
			f.held, f.inTrace, b = f.held[:0], true, b[len(take):]
			continue
		}
		if len(take) == len(line) && line[len(line)-1] != '\n' && strings.HasPrefix(schedTracePrefix, string(start)) {
			f.held = start // the rest of b could still start a trace line
			break
		}
		out = append(append(out, f.held...), line...)
		f.held, b = f.held[:0], b[len(line):]
		f.inLine = line[len(line)-1] != '\n'
	}
	if len(out) > 0 {
		if _, err := f.w.Write(out); err != nil {
			return n, err
		}
	}
	return n, nil
}

// ProcsFor is an instance process's GOMAXPROCS when n of them share this
// host's cpus cores: its share, at least 1. With every process free to run
// a P per core, idle Ps spin and wake one another across processes, which
// costs more than the work, as it would for app servers sharing a host.
func ProcsFor(cpus, n int) int { return max(1, cpus/max(1, n)) }

// localProc is an instance process that is a child of this one.
type localProc struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout io.Reader
}

var _ Proc = (*localProc)(nil)

// startLocal starts instance cfg as a child process reaching its store at
// storeAddr; given a sequence page, as a sequenced client of it (its fd 3).
func startLocal(cfg InstanceConfig, storeAddr string, page *store.SeqPage, log io.Writer) (*localProc, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	conf, err := ChildConfig(cfg, storeAddr)
	if err != nil {
		return nil, err
	}
	if log == nil {
		log = io.Discard
	}
	cmd := ChildCommand(exe, conf, ProcsFor(runtime.NumCPU(), cfg.Scenario.Instances), log)
	if page != nil {
		cmd.ExtraFiles = []*os.File{page.File()}
		cmd.Env = append(cmd.Env, envSeqFD+"="+strconv.Itoa(seqFD))
	}
	p := &localProc{cmd: cmd}
	if p.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	if p.stdout, err = cmd.StdoutPipe(); err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return p, nil
}

func (p *localProc) Stdin() io.WriteCloser { return p.stdin }
func (p *localProc) Stdout() io.Reader     { return p.stdout }
func (p *localProc) Pause() error          { return SignalGroup(p.cmd.Process.Pid, syscall.SIGSTOP) }
func (p *localProc) Resume() error         { return SignalGroup(p.cmd.Process.Pid, syscall.SIGCONT) }
func (p *localProc) Process() string       { return fmt.Sprintf("pid %d", p.cmd.Process.Pid) }
func (p *localProc) ClockOffsetNs() int64  { return 0 }
func (p *localProc) Lost() <-chan struct{} { return nil }
func (p *localProc) Wait() error           { return p.cmd.Wait() }

func (p *localProc) Kill() {
	// A paused process must be continued to die promptly and cleanly,
	// and its adapter with it (which its death kills: Pdeathsig).
	_ = SignalGroup(p.cmd.Process.Pid, syscall.SIGCONT)
	_ = p.cmd.Process.Kill()
	_, _ = p.cmd.Process.Wait()
}
