package servers

import (
	"bufio"
	"cmp"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
)

// Environment of a NATS child process: the running binary started again
// with ChildEnv=ChildNATS runs one nats-server (built from
// github.com/nats-io/nats-server/v2) with JetStream, configured by the
// EnvChildNATS* variables.
const (
	ChildNATS        = "nats"
	EnvChildNATSPort = "LOCKBENCH_CHILD_NATS_PORT"
	// EnvChildNATSHost is the address it listens on (Options.Host).
	EnvChildNATSHost    = "LOCKBENCH_CHILD_NATS_HOST"
	EnvChildNATSDir     = "LOCKBENCH_CHILD_NATS_STORE_DIR"
	natsReadyTimeout    = 20 * time.Second
	natsShutdownTimeout = 2 * time.Second
)

// natsState is the implementation part of NATSServer.
type natsState struct {
	server
	addr     string
	storeDir string
}

// NATSServer is a locally started NATS server with JetStream (the queue
// strategy's broker): an embedded nats-server in a child process, on
// loopback, with its JetStream store under the cluster's temporary
// directory and no authentication.
type NATSServer struct {
	// URL is nats://127.0.0.1:port; it stays the same across Kill/Start.
	URL string
	natsState
}

var (
	_ Node     = (*NATSServer)(nil)
	_ Volatile = (*NATSServer)(nil)
)

// init turns this process into a NATS server when package servers started
// it as one (it never returns then). Every binary that links package
// servers can so be its own NATS launcher: no separate download, no
// build step.
func init() {
	if os.Getenv(ChildEnv) == ChildNATS {
		os.Exit(runNATSChild())
	}
}

// NATS returns the NATS server the cluster started, or nil.
func (c *Cluster) NATS() *NATSServer {
	if c == nil {
		return nil
	}
	return c.nats
}

func (c *Cluster) startNATS(ctx context.Context) error {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("servers: find this executable to run NATS: %w", err)
	}
	for range startAttempts {
		if err = c.startNATSOnce(ctx, self); !addrInUse(err) {
			break
		}
	}
	return err
}

func (c *Cluster) startNATSOnce(ctx context.Context, self string) error {
	ports, err := freePorts(1)
	if err != nil {
		return err
	}
	const name = "nats-0"
	dir := filepath.Join(c.dir, name)
	if err := os.RemoveAll(dir); err != nil { // a failed attempt's leftovers
		return fmt.Errorf("servers: %w", err)
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		return fmt.Errorf("servers: %w", err)
	}
	addr := net.JoinHostPort(c.host(), strconv.Itoa(ports[0]))
	n := &NATSServer{URL: "nats://" + addr}
	n.addr = addr
	n.storeDir = filepath.Join(dir, "jetstream")
	n.server = server{
		name:    name,
		logPath: filepath.Join(dir, "server.log"),
		stopSig: syscall.SIGTERM,
		timeout: natsReadyTimeout,
		build: func() (*exec.Cmd, error) {
			cmd := exec.Command(self)
			cmd.Env = childEnv(ChildEnv+"="+ChildNATS, EnvChildNATSPort+"="+strconv.Itoa(ports[0]), EnvChildNATSHost+"="+c.host(), EnvChildNATSDir+"="+n.storeDir)
			return cmd, nil
		},
		ready: func(ctx context.Context) error { return natsReady(ctx, n.addr) },
		desc:  func() string { return name + " (" + n.URL + ")" },
		cl:    &c.state,
	}
	if err := n.server.start(ctx); err != nil {
		return err
	}
	c.nats = n
	return nil
}

// natsReady reads the server's INFO line and wants JetStream in it.
func natsReady(ctx context.Context, addr string) error {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return err
	}
	if !strings.HasPrefix(line, "INFO ") || !strings.Contains(line, `"jetstream":true`) {
		return fmt.Errorf("INFO without JetStream: %.120s", line)
	}
	return nil
}

// Kill SIGKILLs the server and waits until it has exited. Killing a server
// that is not running does nothing.
func (n *NATSServer) Kill() error { return n.kill() }

// Start starts the server again at the same address, without its JetStream
// store (a killed server's directory is emptied first, as a Redis node
// comes back without persistence): its streams, their messages, their
// duplicate windows and their consumers with their delivery sequences are
// gone. It returns once the server serves. Starting a running server does
// nothing; after Cluster.Stop it returns ErrStopped.
func (n *NATSServer) Start(ctx context.Context) error {
	if n.pid() == 0 {
		if err := os.RemoveAll(n.storeDir); err != nil {
			return fmt.Errorf("servers: %w", err)
		}
	}
	return n.start(ctx)
}

// Volatile is true: a killed and restarted server comes back without its
// store (Start).
func (n *NATSServer) Volatile() bool { return true }

// runNATSChild runs one nats-server until SIGTERM or SIGINT and returns
// the exit code.
func runNATSChild() int {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	port, err := strconv.Atoi(os.Getenv(EnvChildNATSPort))
	dir := os.Getenv(EnvChildNATSDir)
	if err != nil || dir == "" {
		fmt.Fprintf(os.Stderr, "lockbench nats child: want %s and %s\n", EnvChildNATSPort, EnvChildNATSDir)
		return 2
	}
	opts := &natsserver.Options{
		ServerName: "lockbench-nats",
		Host:       cmp.Or(os.Getenv(EnvChildNATSHost), "127.0.0.1"),
		Port:       port,
		JetStream:  true,
		StoreDir:   dir,
		// Our signal handler, not the server's: SIGTERM shuts down, and
		// a SIGKILL is a crash.
		NoSigs:     true,
		NoLog:      false,
		MaxPayload: 1 << 20,
	}
	s, err := natsserver.NewServer(opts)
	if err != nil {
		fmt.Fprintf(os.Stderr, "lockbench nats child: %v\n", err)
		return 1
	}
	s.ConfigureLogger()
	go s.Start()
	if !s.ReadyForConnections(natsReadyTimeout) {
		fmt.Fprintln(os.Stderr, "lockbench nats child: not ready for connections")
		return 1
	}
	<-sig
	done := make(chan struct{})
	go func() { s.Shutdown(); close(done) }()
	select {
	case <-done:
	case <-time.After(natsShutdownTimeout):
	}
	return 0
}
