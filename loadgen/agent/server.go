package agent

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"syscall"
	"time"

	"github.com/lockbench/lockbench/internal/handshake"
	"github.com/lockbench/lockbench/loadgen"
	"github.com/lockbench/lockbench/results"
)

// Version is this binary's lockbench version, as the handshake names it.
func Version() string { return results.CurrentBuild().String() }

// IdleTimeout is how long an agent waits for any word from a session's
// coordinator (it pings every PingEvery) before it takes it for dead and
// kills its instances: 10 seconds.
const IdleTimeout = 10 * time.Second

// Config is an agent's.
type Config struct {
	// Token is the shared token (TokenEnv); required.
	Token string
	// TLS, when set, is the server side of TLS on every connection (with
	// ClientCAs and RequireAndVerifyClientCert for mutual TLS).
	TLS *tls.Config
	// Log receives one line per session and refusal, and the instances'
	// stderr; nil discards them.
	Log io.Writer
	// Exe is the binary instance processes run: the agent's own
	// (os.Executable) when empty. It must call loadgen.MaybeRunChild first.
	Exe string
}

// Agent runs instance processes for coordinators: one session per control
// connection, whose instances die with it.
type Agent struct {
	cfg   Config
	logMu sync.Mutex

	mu       sync.Mutex
	sessions map[uint64]*session
	nextID   uint64
	conns    map[net.Conn]struct{}
	closed   bool
}

// New returns an agent; Serve runs it.
func New(cfg Config) (*Agent, error) {
	if cfg.Token == "" {
		return nil, fmt.Errorf("agent: no token: set %s", TokenEnv)
	}
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	if cfg.Exe == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, err
		}
		cfg.Exe = exe
	}
	return &Agent{cfg: cfg, sessions: map[uint64]*session{}, conns: map[net.Conn]struct{}{}}, nil
}

func (a *Agent) logf(format string, args ...any) {
	a.logMu.Lock()
	defer a.logMu.Unlock()
	fmt.Fprintf(a.cfg.Log, "lockbench agent: "+format+"\n", args...)
}

// Serve accepts coordinators on ln until ln is closed or ctx is done;
// then every session ends and every instance process is killed. A
// connection that has not sent an accepted hello within HandshakeTimeout
// is closed, and of more than MaxPending such connections at once the
// oldest is (internal/handshake): silent or slow connections cannot pile
// up, nor keep a coordinator out.
func (a *Agent) Serve(ctx context.Context, ln net.Listener) error {
	ln = handshake.NewListener(ln, HandshakeTimeout, MaxPending)
	stop := context.AfterFunc(ctx, func() { _ = ln.Close() })
	defer stop()
	defer a.shutdown()
	for {
		conn, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) || ctx.Err() != nil {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return err
		}
		if a.cfg.TLS != nil {
			conn = tls.Server(conn, a.cfg.TLS)
		}
		if !a.track(conn) {
			conn.Close()
			return nil
		}
		go func() {
			defer a.untrack(conn)
			a.serveConn(conn)
		}()
	}
}

func (a *Agent) track(c net.Conn) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return false
	}
	a.conns[c] = struct{}{}
	return true
}

func (a *Agent) untrack(c net.Conn) {
	a.mu.Lock()
	delete(a.conns, c)
	a.mu.Unlock()
	_ = c.Close()
}

// shutdown closes every connection and kills every instance.
func (a *Agent) shutdown() {
	a.mu.Lock()
	a.closed = true
	var conns []net.Conn
	for c := range a.conns {
		conns = append(conns, c)
	}
	var sessions []*session
	for _, s := range a.sessions {
		sessions = append(sessions, s)
	}
	a.mu.Unlock()
	for _, c := range conns {
		_ = c.Close()
	}
	for _, s := range sessions {
		s.end()
	}
}

// serveConn authenticates a connection and serves it as its kind says.
func (a *Agent) serveConn(conn net.Conn) {
	peer := conn.RemoteAddr().String()
	_ = conn.SetDeadline(time.Now().Add(HandshakeTimeout))
	h, err := readHello(conn)
	if err != nil {
		// A connection closed without a word (a TCP readiness probe) is
		// not worth a line; a failed TLS handshake or a stranger is, and
		// so is one closed for its silence.
		var ne net.Error
		switch {
		case errors.Is(err, io.EOF):
		case errors.Is(err, net.ErrClosed) || errors.As(err, &ne) && ne.Timeout():
			a.logf("closed %s before its hello: silent for %s, or the oldest of %d pending", peer, HandshakeTimeout, MaxPending)
		default:
			a.logf("refused %s: %v", peer, err)
		}
		return
	}
	if why := h.check(a.cfg.Token); why != "" {
		a.logf("refused %s: %s", peer, why)
		_ = writeStatus(conn, statusRefused, why)
		return
	}
	if !handshake.Done(conn) {
		return // closed meanwhile: timed out, or made room for another
	}
	switch h.Kind {
	case kindControl:
		s := a.newSession(peer)
		host, _ := os.Hostname()
		if err := writeJSONStatus(conn, helloReply{Version: Version(), Host: host, Session: s.id, CPUs: runtime.NumCPU()}); err != nil {
			s.end()
			return
		}
		_ = conn.SetDeadline(time.Time{})
		a.logf("session %d: coordinator %s (lockbench %s)", s.id, peer, h.Version)
		why := s.serveControl(conn)
		n := s.end()
		a.logf("session %d: coordinator %s gone (%s); %d instance(s) killed", s.id, peer, why, n)
	case kindInstance:
		a.serveInstance(conn)
	}
}

func (a *Agent) newSession(peer string) *session {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.nextID++
	s := &session{a: a, id: a.nextID, peer: peer, procs: map[uint64]*child{}}
	a.sessions[s.id] = s
	return s
}

func (a *Agent) session(id uint64) *session {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.sessions[id]
}

// session is one coordinator's control connection and the instance
// processes it started.
type session struct {
	a    *Agent
	id   uint64
	peer string

	mu    sync.Mutex
	procs map[uint64]*child
	ended bool
}

// child is one instance process and its connection.
type child struct {
	cmd  *exec.Cmd
	conn net.Conn
	done chan struct{} // closed once it has been reaped
}

// kill ends the process and cuts its relay: a relay blocked on a dead
// coordinator's connection returns.
func (c *child) kill() {
	// A stopped process (and its group) must be continued to die promptly.
	_ = loadgen.SignalGroup(c.cmd.Process.Pid, syscall.SIGCONT)
	_ = c.cmd.Process.Kill()
	_ = c.conn.SetDeadline(time.Now())
}

// serveControl answers the coordinator's requests until the connection
// ends or falls silent for IdleTimeout, and says why it ended.
func (s *session) serveControl(conn net.Conn) string {
	dec := gob.NewDecoder(bufio.NewReader(conn))
	bw := bufio.NewWriter(conn)
	enc := gob.NewEncoder(bw)
	for {
		_ = conn.SetReadDeadline(time.Now().Add(IdleTimeout))
		var r request
		if err := dec.Decode(&r); err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				return fmt.Sprintf("silent for %s", IdleTimeout)
			}
			if errors.Is(err, io.EOF) {
				return "connection closed"
			}
			return err.Error()
		}
		rep := reply{ID: r.ID}
		switch r.Op {
		case opPing:
		case opClock:
			rep.NowNs = time.Now().UnixNano()
		case opSignal:
			if err := s.signal(r.Key, r.Signal); err != nil {
				rep.Err = err.Error()
			}
		default:
			rep.Err = fmt.Sprintf("unknown request %q", r.Op)
		}
		_ = conn.SetWriteDeadline(time.Now().Add(IdleTimeout))
		if err := enc.Encode(rep); err != nil {
			return err.Error()
		}
		if err := bw.Flush(); err != nil {
			return err.Error()
		}
	}
}

// signal stops or continues one of the session's instance processes: only
// ever a child of this agent.
func (s *session) signal(key uint64, sig string) error {
	s.mu.Lock()
	c := s.procs[key]
	s.mu.Unlock()
	if c == nil {
		return fmt.Errorf("no instance %d in this session", key)
	}
	var n syscall.Signal
	switch sig {
	case "stop":
		n = syscall.SIGSTOP
	case "cont":
		n = syscall.SIGCONT
	default:
		return fmt.Errorf("unknown signal %q", sig)
	}
	// The whole group: the instance's adapter, if any, stops with it.
	return loadgen.SignalGroup(c.cmd.Process.Pid, n)
}

// add registers c; false if the session has ended (c is then killed).
func (s *session) add(key uint64, c *child) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return false
	}
	s.procs[key] = c
	return true
}

func (s *session) remove(key uint64, c *child) {
	s.mu.Lock()
	if s.procs[key] == c {
		delete(s.procs, key)
	}
	s.mu.Unlock()
}

// end kills every instance process of the session and waits until they
// are reaped; it returns how many it killed.
func (s *session) end() int {
	s.mu.Lock()
	s.ended = true
	procs := s.procs
	s.procs = map[uint64]*child{}
	s.mu.Unlock()
	s.a.mu.Lock()
	delete(s.a.sessions, s.id)
	s.a.mu.Unlock()
	for _, c := range procs {
		c.kill()
	}
	for _, c := range procs {
		<-c.done
	}
	return len(procs)
}

// serveInstance starts the instance process a spawn request asks for and
// relays its streams: the connection's input to the process's stdin, its
// stdout back, until the process exits (or the connection or session
// ends, which kills it).
func (a *Agent) serveInstance(conn net.Conn) {
	boundStream(conn, (*net.TCPConn).SetReadBuffer)
	req, err := readSpawn(conn)
	if err != nil {
		return
	}
	s := a.session(req.Session)
	if s == nil {
		_ = writeStatus(conn, statusRefused, fmt.Sprintf("no session %d (its control connection is gone)", req.Session))
		return
	}
	cmd := loadgen.ChildCommand(a.cfg.Exe, req.Config, req.Procs, &prefixWriter{a: a, prefix: fmt.Sprintf("session %d instance %d: ", s.id, req.Key)})
	// The process presents the agent's token to the coordinator's store,
	// from its environment (whatever the agent's own says).
	cmd.Env = append(cmd.Env, TokenEnv+"="+a.cfg.Token)
	stdin, err := cmd.StdinPipe()
	if err == nil {
		var stdout io.ReadCloser
		if stdout, err = cmd.StdoutPipe(); err == nil {
			if err = cmd.Start(); err == nil {
				a.relay(conn, s, req.Key, cmd, stdin, stdout)
				return
			}
		}
	}
	_ = writeStatus(conn, statusRefused, "could not start the instance process: "+err.Error())
}

func (a *Agent) relay(conn net.Conn, s *session, key uint64, cmd *exec.Cmd, stdin io.WriteCloser, stdout io.Reader) {
	c := &child{cmd: cmd, conn: conn, done: make(chan struct{})}
	reaped := make(chan struct{})
	go func() {
		defer close(reaped)
		// Copy the reports back until the process closes its stdout (it
		// exited); then it can be reaped, and the relay of its input,
		// which has nowhere to go, ends.
		_, _ = io.Copy(conn, stdout)
		_ = cmd.Wait()
		close(c.done)
		_ = conn.SetReadDeadline(time.Now())
	}()
	if !s.add(key, c) {
		c.kill()
		<-reaped
		return
	}
	defer s.remove(key, c)
	if err := writeStatus(conn, statusOK, "{}"); err != nil {
		c.kill()
		<-reaped
		return
	}
	a.logf("session %d: instance %d started (pid %d)", s.id, key, cmd.Process.Pid)
	_ = conn.SetDeadline(time.Time{})
	// Deliveries until the coordinator closes its side (EOF: the
	// instance drains and reports "done") or the connection breaks (the
	// coordinator is gone: the process is killed).
	_, err := io.Copy(stdin, conn)
	_ = stdin.Close()
	if err != nil {
		c.kill()
	}
	select {
	case <-reaped:
	case <-time.After(stopTimeout):
		c.kill()
		<-reaped
	}
	// The relay is over: the connection is closed by the caller.
}

// stopTimeout bounds an instance's drain after its input ended: 60
// seconds, as the coordinator's own.
const stopTimeout = 60 * time.Second

// prefixWriter logs an instance's stderr through the agent's log, each
// write on its own line with prefix.
type prefixWriter struct {
	a      *Agent
	prefix string
}

func (w *prefixWriter) Write(b []byte) (int, error) {
	w.a.logMu.Lock()
	defer w.a.logMu.Unlock()
	_, _ = fmt.Fprintf(w.a.cfg.Log, "lockbench agent: %s%s", w.prefix, b)
	if len(b) > 0 && b[len(b)-1] != '\n' {
		_, _ = io.WriteString(w.a.cfg.Log, "\n")
	}
	return len(b), nil
}
