package adapter

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/lockbench/lockbench/strategies"
)

// Protocol is the adapter protocol version this package speaks.
const Protocol = 1

// helloWord is the value of a hello's "hello" field.
const helloWord = "lockbench-adapter"

// Lease models of a hello's "lease" field.
const (
	// LeaseTTL: the lock expires after the TTL unless the caller extends it.
	LeaseTTL = "ttl"
	// LeaseSession: the lock lives as long as a client session the library
	// keeps alive (ZooKeeper).
	LeaseSession = "session"
	// LeaseRenewed: the library refreshes the lease on a timer while its
	// holder runs (redis-semaphore).
	LeaseRenewed = "renewed"
)

// Hello is what an adapter says about itself: its first line, and all that
// `PATH --hello` prints.
type Hello struct {
	Hello          string `json:"hello"`
	Protocol       int    `json:"protocol"`
	Name           string `json:"name"`
	Library        string `json:"library"`
	LibraryVersion string `json:"library_version"`
	// Backend is the kind of server: redis, zookeeper, etcd, postgres,
	// mysql, nats or none.
	Backend string `json:"backend"`
	// Nodes is how many independent nodes of Backend the lock talks to.
	Nodes int `json:"nodes"`
	// Lease is LeaseTTL, LeaseSession or LeaseRenewed.
	Lease        string       `json:"lease"`
	Capabilities Capabilities `json:"capabilities"`
}

// Capabilities are the optional abilities an adapter claims.
type Capabilities struct {
	// Token: acquire answers carry a fencing token.
	Token bool `json:"token"`
	// Extend: the adapter answers extend.
	Extend bool `json:"extend"`
	// Blocking: acquire waits up to timeout_ms for the lock.
	Blocking bool `json:"blocking"`
}

var backends = map[string]strategies.Backend{
	"redis": strategies.BackendRedis, "zookeeper": strategies.BackendZooKeeper,
	"etcd": strategies.BackendEtcd, "postgres": strategies.BackendPostgres,
	"mysql": strategies.BackendMySQL, "nats": strategies.BackendNATS, "none": strategies.BackendNone,
}

// check says what is wrong with h, nil when nothing is.
func (h Hello) check() error {
	switch {
	case h.Hello != helloWord:
		return fmt.Errorf(`hello line without "hello":%q`, helloWord)
	case h.Protocol != Protocol:
		return fmt.Errorf("speaks protocol %d; lockbench speaks %d", h.Protocol, Protocol)
	case h.Name == "" || strings.ContainsAny(h.Name, " ,\t\n"):
		return fmt.Errorf("hello name %q: want a name without blanks or commas", h.Name)
	case h.Nodes < 0:
		return fmt.Errorf("hello nodes %d: want 0 or more", h.Nodes)
	}
	if _, ok := backends[h.Backend]; !ok {
		return fmt.Errorf("hello backend %q: want one of redis, zookeeper, etcd, postgres, mysql, nats, none", h.Backend)
	}
	switch h.Lease {
	case LeaseTTL, LeaseSession, LeaseRenewed:
	default:
		return fmt.Errorf("hello lease %q: want ttl, session or renewed", h.Lease)
	}
	return nil
}

// Need is the server the adapter needs.
func (h Hello) Need() strategies.Need {
	return strategies.Need{Backend: backends[h.Backend], Nodes: h.Nodes}
}

// parseHello reads a hello line.
func parseHello(line []byte) (Hello, error) {
	var h Hello
	dec := json.NewDecoder(bytes.NewReader(line))
	if err := dec.Decode(&h); err != nil {
		return Hello{}, fmt.Errorf("printed %s, not a hello", quoteLine(line))
	}
	if err := h.check(); err != nil {
		return Hello{}, err
	}
	return h, nil
}

// HelloTimeout bounds how long an adapter may take to send its hello, and
// `PATH --hello` to print it: 5 seconds.
const HelloTimeout = 5 * time.Second

// ReadHello runs `cmd --hello` and returns the hello it prints, within
// HelloTimeout (or ctx, if that ends first), as soon as its first line is
// out. Its errors are one line that names the adapter and what went
// wrong. The process runs in a group of its own, killed whole once the
// line is read, so that nothing it started lingers.
func ReadHello(ctx context.Context, cmd Command) (Hello, error) {
	ctx, cancel := context.WithTimeout(ctx, HelloTimeout)
	defer cancel()
	c := exec.Command(cmd.Path, append(append([]string(nil), cmd.Args...), "--hello")...)
	c.Env, c.Dir = cmd.environ(nil), cmd.Dir
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	c.WaitDelay = time.Second
	stderr := newTailBuffer(4096)
	c.Stderr = stderr
	stdout, err := c.StdoutPipe()
	if err != nil {
		return Hello{}, cmd.errorf("%v", err)
	}
	if err := c.Start(); err != nil {
		return Hello{}, cmd.errorf("cannot start: %v", err)
	}
	lines := make(chan []byte, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 0, 4096), maxLine)
		for sc.Scan() {
			if line := bytes.TrimSpace(sc.Bytes()); len(line) > 0 {
				lines <- bytes.Clone(line)
				return
			}
		}
		close(lines)
	}()
	var line []byte
	select {
	case line = <-lines:
	case <-ctx.Done():
	}
	_ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
	werr := c.Wait()
	switch {
	case line != nil:
	case ctx.Err() != nil:
		return Hello{}, cmd.errorf("--hello printed nothing within %v", HelloTimeout)
	case werr != nil:
		return Hello{}, cmd.errorf("--hello failed (%v)%s", werr, stderrTail(stderr.Bytes()))
	default:
		return Hello{}, cmd.errorf("--hello printed nothing%s", stderrTail(stderr.Bytes()))
	}
	h, herr := parseHello(line)
	if herr != nil {
		return Hello{}, cmd.errorf("--hello: %v", herr)
	}
	return h, nil
}
