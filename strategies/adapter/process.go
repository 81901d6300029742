package adapter

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/lockbench/lockbench/strategies"
)

// LostLog is where a lost adapter's one line goes: standard error, which an
// instance process passes on to lockbench's.
var LostLog io.Writer = os.Stderr

// AnswerGrace is how long past a request's deadline an adapter may take
// to answer it before it counts as lost: 5 seconds.
const AnswerGrace = 5 * time.Second

// proc is one running adapter process and its pipe.
type proc struct {
	cmd   Command
	c     *exec.Cmd
	stdin io.WriteCloser
	// stdout is closed when the adapter is lost, so that the reader ends
	// even if a grandchild of the adapter keeps the pipe open.
	stdout io.Closer
	log    io.WriteCloser

	wmu sync.Mutex // one line at a time on stdin

	mu      sync.Mutex
	nextID  int64
	pending map[int64]*call
	held    map[int64]*holding // granted locks by acquire id, for lost events
	err     error              // why the adapter is lost, once it is
	closing bool
	// started: the adapter said hello; only then is its loss a line of
	// its own on LostLog.
	started bool

	hello  chan Hello    // the hello, once
	lost   chan struct{} // closed once err is set
	exited chan struct{} // closed once the process has been reaped
}

// holding is the state of a granted lock that events change.
type holding struct {
	lost atomic.Bool // the adapter sent a lost event for it
}

// call is one request waiting for its answer.
type call struct {
	id int64
	op string
	// held is the lock an acquire's ok answer grants, registered by the
	// reader before the answer is handed on, so that a lost event right
	// after it finds it.
	held *holding
	// lock is the lock a release names: its state goes with the answer.
	lock   int64
	answer chan message // buffered: the reader never blocks on it
	timer  *time.Timer  // fires AnswerGrace past the request's deadline
}

// start starts the adapter and waits for its hello.
func start(ctx context.Context, cmd Command, cfg strategies.Config, log io.WriteCloser) (*proc, Hello, error) {
	if EndpointEnv == nil {
		_ = log.Close()
		return nil, Hello{}, cmd.errorf("cannot be told its servers: this program does not link package servers/adapterenv")
	}
	c := exec.Command(cmd.Path, cmd.Args...)
	c.Env, c.Dir = cmd.environ(&cfg), cmd.Dir
	c.SysProcAttr = childAttr()
	tail := newTailBuffer(4096)
	c.Stderr = io.MultiWriter(log, tail)
	// A grandchild that keeps stderr open must not keep Wait waiting.
	c.WaitDelay = time.Second
	p := &proc{cmd: cmd, c: c, log: log, pending: map[int64]*call{}, held: map[int64]*holding{},
		hello: make(chan Hello, 1), lost: make(chan struct{}), exited: make(chan struct{})}
	var err error
	if p.stdin, err = c.StdinPipe(); err != nil {
		_ = log.Close()
		return nil, Hello{}, cmd.errorf("%v", err)
	}
	stdout, err := c.StdoutPipe()
	if err != nil {
		_ = log.Close()
		return nil, Hello{}, cmd.errorf("%v", err)
	}
	p.stdout = stdout
	if err := c.Start(); err != nil {
		_ = log.Close()
		return nil, Hello{}, cmd.errorf("cannot start: %v", err)
	}
	done := make(chan struct{})
	go func() {
		p.read(stdout)
		close(done)
	}()
	go func() {
		<-done
		werr := c.Wait()
		_ = log.Close()
		if stoppedWithUs(werr) {
			p.interrupt(fmt.Sprintf("stopped by a signal (%v), as lockbench is", exitText(werr)))
		} else {
			p.lose(fmt.Sprintf("exited (%v)%s", exitText(werr), stderrTail(tail.Bytes())))
		}
		close(p.exited)
	}()
	t := time.NewTimer(HelloTimeout)
	defer t.Stop()
	select {
	case h := <-p.hello:
		return p, h, nil
	case <-p.lost:
	case <-t.C:
		p.lose(fmt.Sprintf("sent no hello within %v%s", HelloTimeout, stderrTail(tail.Bytes())))
	case <-ctx.Done():
		p.lose(fmt.Sprintf("sent no hello before it was given up (%v)", ctx.Err()))
	}
	<-p.exited // killed: prompt
	return nil, Hello{}, p.failure()
}

func exitText(err error) string {
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}

// read reads the adapter's lines until its stdout ends or a line breaks the
// protocol: the hello first, then answers and events.
func (p *proc) read(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), maxLine)
	first := true
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		if first {
			h, err := parseHello(line)
			if err != nil {
				p.lose(err.Error())
				return
			}
			first = false
			p.mu.Lock()
			p.started = true
			p.mu.Unlock()
			p.hello <- h
			continue
		}
		var m message
		if err := json.Unmarshal(line, &m); err != nil || (m.ID == nil && m.Event == "") {
			p.lose("printed " + quoteLine(line) + ", not a protocol line")
			return
		}
		if m.ID == nil {
			p.event(m)
			continue
		}
		p.mu.Lock()
		c := p.pending[*m.ID]
		delete(p.pending, *m.ID)
		p.mu.Unlock()
		if c == nil {
			p.lose(fmt.Sprintf("answered request %d, which is not waiting for an answer", *m.ID))
			return
		}
		c.timer.Stop()
		if c.op == opAcquire && m.OK {
			p.mu.Lock()
			p.held[*m.ID] = c.held
			p.mu.Unlock()
		}
		if c.op == opRelease {
			p.forget(c.lock)
		}
		c.answer <- m
	}
	if err := sc.Err(); err != nil {
		p.lose(fmt.Sprintf("printed an overlong line or could not be read (%v)", err))
	}
	// EOF: the waiter on the process says how it exited.
}

// event handles an unprompted event.
func (p *proc) event(m message) {
	if m.Event != eventLost {
		// Unknown events are for later protocol versions: logged, not fatal.
		p.logf("unknown event %q", m.Event)
		return
	}
	p.mu.Lock()
	h := p.held[m.Lock]
	p.mu.Unlock()
	if h == nil {
		p.logf("lost event for lock %d, which is not held", m.Lock)
		return
	}
	h.lost.Store(true)
}

// logf writes one line of lockbench's own to the adapter's log.
func (p *proc) logf(format string, args ...any) {
	_, _ = fmt.Fprintf(p.log, "lockbench: "+format+"\n", args...)
}

// lose marks the adapter lost for why (the first reason wins), kills it,
// and fails every call waiting for an answer.
func (p *proc) lose(why string) { p.fail(why, false) }

// interrupt is lose for an adapter stopped along with lockbench: its
// calls fail as interrupted (strategies.ErrInterrupted), not lost, and no
// line is said.
func (p *proc) interrupt(why string) { p.fail(why, true) }

func (p *proc) fail(why string, interrupted bool) {
	p.mu.Lock()
	if p.err != nil {
		p.mu.Unlock()
		return
	}
	switch {
	case interrupted:
		p.err = fmt.Errorf("%w: %w", p.cmd.errorf("%s", why), strategies.ErrInterrupted)
	case p.closing:
		p.err = errClosed
	default:
		p.err = fmt.Errorf("%w: %w", p.cmd.errorf("%s", why), strategies.ErrAdapterLost)
	}
	pending := p.pending
	p.pending = map[int64]*call{}
	say := !p.closing && p.started && !interrupted
	p.mu.Unlock()
	close(p.lost)
	// Before its hello, start returns the error, which says it all.
	if say {
		// One line for the person running lockbench, as a lost agent
		// gets: the run goes on, the instance's deliveries fail.
		fmt.Fprintf(LostLog, "lockbench: %v; the instance's later calls fail as adapter_lost\n", p.err)
	}
	for _, c := range pending {
		c.timer.Stop()
	}
	if p.c.Process != nil {
		_ = p.c.Process.Kill()
	}
	_ = p.stdout.Close()
}

// stoppedWithUs reports whether the adapter died of a signal that stops
// lockbench too when sent to its process group: SIGINT, SIGTERM, SIGHUP.
func stoppedWithUs(err error) bool {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return false
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() {
		return false
	}
	switch ws.Signal() {
	case syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP:
		return true
	}
	return false
}

// errClosed is the error of calls made after Close.
var errClosed = fmt.Errorf("adapter: strategy closed: %w", strategies.ErrAdapterLost)

// failure is why the adapter is lost.
func (p *proc) failure() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// send registers and sends a request, due AnswerGrace after deadline, and
// returns its call.
func (p *proc) send(r request, deadline time.Time) (*call, error) {
	c := &call{op: r.Op, answer: make(chan message, 1), lock: r.Lock}
	if r.Op == opAcquire {
		c.held = &holding{}
	}
	p.mu.Lock()
	if p.err != nil {
		p.mu.Unlock()
		return nil, p.err
	}
	p.nextID++
	r.ID = p.nextID
	id := r.ID
	c.id = id
	p.pending[id] = c
	c.timer = time.AfterFunc(time.Until(deadline)+AnswerGrace, func() {
		p.mu.Lock()
		_, waiting := p.pending[id]
		p.mu.Unlock()
		if waiting {
			p.lose(fmt.Sprintf("did not answer %s within %v after its deadline", r.Op, AnswerGrace))
		}
	})
	p.mu.Unlock()
	if err := p.write(r); err != nil {
		return nil, err
	}
	return c, nil
}

// write sends one request line. A write to an adapter that stopped
// reading blocks until its pipe is broken: the watchdog of some request
// then kills it.
func (p *proc) write(r request) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	p.wmu.Lock()
	_, err = p.stdin.Write(b)
	p.wmu.Unlock()
	if err != nil {
		// A closed input is most often an adapter that has exited: let its
		// exit status decide (stopped with lockbench, or lost), for a
		// moment, before calling it lost here.
		select {
		case <-p.exited:
		case <-time.After(time.Second):
		}
		p.lose(fmt.Sprintf("stopped reading its input (%v)", err))
		return p.failure()
	}
	return nil
}

// forget drops a released lock's state.
func (p *proc) forget(lock int64) {
	p.mu.Lock()
	delete(p.held, lock)
	p.mu.Unlock()
}

// wait waits for c's answer, for the adapter to be lost, or for ctx.
func (p *proc) wait(ctx context.Context, c *call) (message, error) {
	select {
	case m := <-c.answer:
		return m, nil
	case <-p.lost:
		// An answer read before the loss still counts.
		select {
		case m := <-c.answer:
			return m, nil
		default:
		}
		return message{}, p.failure()
	case <-ctx.Done():
		return message{}, ctx.Err()
	}
}

// close kills the adapter (a process that exits on its own may release
// its locks, or close a ZooKeeper session, which Close must not) and waits
// for it to be reaped.
func (p *proc) close() {
	p.mu.Lock()
	p.closing = true
	p.mu.Unlock()
	p.lose("closed")
	<-p.exited
}
