package servers

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

const (
	// readyPollInterval is how often a starting server is probed.
	readyPollInterval = 50 * time.Millisecond
	// probeTimeout bounds one readiness probe.
	probeTimeout = time.Second
	// startAttempts is how many times a server is started with fresh ports
	// when its address turns out to be taken.
	startAttempts = 3
)

// server is what every locally started server has in common: a name, a log
// file, how to build its command and probe it, and the one process that
// currently runs it.
type server struct {
	name    string // "redis-0", for errors and log prefixes
	logPath string
	stopSig syscall.Signal // the polite signal Stop sends
	timeout time.Duration  // readiness deadline
	build   func() (*exec.Cmd, error)
	ready   func(ctx context.Context) error
	desc    func() string // name and address, for errors
	cl      *state

	// mu serialises start, kill and stop of this server, so the fault
	// injector and Stop can race without leaking a process: whoever comes
	// second sees the first one's result.
	mu      sync.Mutex
	p       *proc // nil when not running
	stopped bool
}

// start runs the server unless it is running and waits until it is ready.
// A process that fails to become ready is killed.
func (s *server) start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return ErrStopped
	}
	if s.p != nil && !s.p.exited() {
		return nil
	}
	s.p = nil
	cmd, err := s.build()
	if err != nil {
		return s.startErr(err)
	}
	p, err := launch(cmd, s.logPath, s.cl.logWriter(s.name))
	if err != nil {
		return s.startErr(err)
	}
	if err := s.waitReady(ctx, p); err != nil {
		_ = p.kill()
		return s.startErr(err)
	}
	s.p = p
	return nil
}

// waitReady probes until the server answers, exits, or time runs out.
// Cluster.Stop cancels the wait (it needs s.mu, which start holds).
func (s *server) waitReady(parent context.Context, p *proc) error {
	ctx, cancel := context.WithTimeout(parent, s.timeout)
	defer cancel()
	unhook := context.AfterFunc(s.cl.stopCtx, cancel)
	defer unhook()
	tick := time.NewTicker(readyPollInterval)
	defer tick.Stop()
	var last error
	for {
		pctx, pcancel := context.WithTimeout(ctx, probeTimeout)
		last = s.ready(pctx)
		pcancel()
		if last == nil {
			return nil
		}
		select {
		case <-p.done:
			return fmt.Errorf("exited before it was ready: %v", p.err)
		case <-ctx.Done():
			switch {
			case s.cl.stopCtx.Err() != nil:
				return ErrStopped
			case parent.Err() != nil:
				return parent.Err()
			default:
				return fmt.Errorf("not ready after %v: %v", s.timeout, last)
			}
		case <-tick.C:
		}
	}
}

func (s *server) startErr(err error) error {
	return &StartError{Server: s.desc(), Err: err, LogTail: logTail(s.logPath)}
}

// kill SIGKILLs the server and waits for it to be gone. Killing a server
// that is not running does nothing.
func (s *server) kill() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.p == nil {
		return nil
	}
	err := s.p.kill()
	s.p = nil
	return err
}

// stop stops the server for good.
func (s *server) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopped = true
	if s.p != nil {
		s.p.terminate(s.stopSig, stopGrace)
		s.p = nil
	}
}

// pid returns the running process's pid, or 0.
func (s *server) pid() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.p == nil || s.p.exited() {
		return 0
	}
	return s.p.pid
}

// addrInUse reports whether err says the server could not bind its port.
func addrInUse(err error) bool {
	var se *StartError
	if !errors.As(err, &se) {
		return false
	}
	return strings.Contains(strings.ToLower(se.LogTail), "address already in use")
}

// Name names the server and its address for people: "redis-2 (127.0.0.1:6390)".
func (s *server) Name() string { return s.desc() }
