package servers

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/lockbench/lockbench/internal/atomicfile"
)

const (
	// redisReadyTimeout bounds the wait for a starting node to answer PING.
	redisReadyTimeout = 10 * time.Second
	// redisMaxClients is the nodes' maxclients: far more than any run opens.
	redisMaxClients = 10000
	// faketimeFile is the node's clock offset file, read by libfaketime.
	faketimeFile = "faketime"
)

// redisState is the implementation part of Redis.
type redisState struct {
	server
	port int
	// host is the address it listens on (Options.Host).
	host     string
	dir      string
	faketime bool
	// group is the replicated Redis the node belongs to (the sentinel
	// topology); nil for an independent master.
	group *sentinelGroup
	// secure is Options.Secure: TLS only and an ACL user when set.
	secure *Secure
}

// startRedis starts the cluster's Redis: n independent masters, or with
// Options.RedisTopology sentinel the replicated group (whatever n).
func (c *Cluster) startRedis(ctx context.Context, n int, bins binaries) error {
	if err := c.opts.Secure.check(); err != nil {
		return err
	}
	if c.opts.RedisTopology == TopologySentinel {
		return c.startSentinelGroup(ctx, bins)
	}
	for i := range n {
		r, err := c.newRedis(fmt.Sprintf("redis-%d", i), bins, nil)
		if err != nil {
			return err
		}
		c.Redis = append(c.Redis, r)
		for range startAttempts {
			ports, perr := freePorts(1)
			if perr != nil {
				return perr
			}
			r.port, r.Addr = ports[0], net.JoinHostPort(r.host, strconv.Itoa(ports[0]))
			if err = r.start(ctx); !addrInUse(err) {
				break
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// newRedis prepares a node's directory and server (not started, no port
// yet); group is the replicated Redis it belongs to, if any.
func (c *Cluster) newRedis(name string, bins binaries, group *sentinelGroup) (*Redis, error) {
	r := &Redis{}
	r.dir = filepath.Join(c.dir, name)
	if err := os.Mkdir(r.dir, 0o755); err != nil {
		return nil, fmt.Errorf("servers: %w", err)
	}
	r.group = group
	r.host = c.host()
	r.faketime = c.opts.Faketime
	r.secure = c.opts.Secure
	if r.secure.auth() {
		if err := r.writeACL(); err != nil {
			return nil, fmt.Errorf("servers: %s: %w", name, err)
		}
	}
	if r.faketime {
		if err := atomicfile.WriteFile(r.tsPath(), []byte("+0s\n")); err != nil {
			return nil, fmt.Errorf("servers: %s: %w", name, err)
		}
	}
	r.server = server{
		name:    name,
		logPath: filepath.Join(r.dir, "server.log"),
		stopSig: syscall.SIGTERM,
		timeout: redisReadyTimeout,
		build:   func() (*exec.Cmd, error) { return r.command(bins, c.opts.RedisAOF), nil },
		ready:   r.ready,
		desc:    func() string { return name + " (" + r.Addr + ")" },
		cl:      &c.state,
	}
	return r, nil
}

func (r *Redis) tsPath() string { return filepath.Join(r.dir, faketimeFile) }

func (r *Redis) command(bins binaries, aof bool) *exec.Cmd {
	appendonly := "no"
	if aof {
		appendonly = "yes"
	}
	port := []string{"--port", strconv.Itoa(r.port)}
	if r.secure.tls() {
		// TLS only: the plain port is closed, so nothing can pass unseen.
		port = []string{"--port", "0", "--tls-port", strconv.Itoa(r.port),
			"--tls-cert-file", r.secure.Certs.ServerCert,
			"--tls-key-file", r.secure.Certs.ServerKey,
			"--tls-ca-cert-file", r.secure.Certs.CA,
			"--tls-auth-clients", "no"}
	}
	if r.secure.auth() {
		port = append(port, "--aclfile", r.aclPath())
	}
	cmd := exec.Command(bins.redisServer, port...)
	cmd.Args = append(cmd.Args,
		"--bind", r.host,
		"--save", "",
		"--appendonly", appendonly,
		"--dir", r.dir,
		"--daemonize", "no",
		"--maxclients", strconv.Itoa(redisMaxClients),
	)
	if ip := net.ParseIP(r.host); ip != nil && !ip.IsLoopback() {
		// Protected mode refuses every client but loopback ones on a
		// node without a password; Options.Host is private (CheckHost).
		cmd.Args = append(cmd.Args, "--protected-mode", "no")
	}
	if r.group != nil {
		cmd.Args = append(cmd.Args, r.group.replicationArgs(r)...)
	}
	cmd.Dir = r.dir
	if r.faketime {
		// libc's debugging malloc goes before libfaketime, and only the wall
		// clock is faked: the package doc's caveats say why.
		cmd.Env = childEnv(
			"LD_PRELOAD="+bins.mallocDebug+":"+bins.faketime,
			"FAKETIME_TIMESTAMP_FILE="+r.tsPath(),
			"FAKETIME_NO_CACHE=1",
			"FAKETIME_DONT_FAKE_MONOTONIC=1",
		)
	} else {
		cmd.Env = childEnv()
	}
	return cmd
}

// aclPath is the node's ACL file (Options.Secure with a password).
func (r *Redis) aclPath() string { return filepath.Join(r.dir, "users.acl") }

// writeACL writes the ACL file: the default user disabled, and
// Secure.User with Secure.Password allowed everything. The password is in
// a file only the owner reads, not on the command line.
func (r *Redis) writeACL() error {
	acl := "user default off\n" +
		"user " + r.secure.user() + " on >" + r.secure.Password + " ~* &* +@all\n"
	return os.WriteFile(r.aclPath(), []byte(acl), 0o600)
}

// URL is how a client names the node: Addr for a plain node, and for one
// started with Options.Secure a rediss:// (TLS) or redis:// URL with the
// ACL user and password, as a Config.RedisAddrs entry.
func (r *Redis) URL() string { return r.secure.redisURL(r.Addr) }

// ready probes the node: one PING, over TLS and logged in as the ACL user
// with Options.Secure.
func (r *Redis) ready(ctx context.Context) error { return pingAs(ctx, r.Addr, r.secure) }

// pingRedis sends one PING and expects +PONG.
func pingRedis(ctx context.Context, addr string) error {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	if _, err := conn.Write([]byte("*1\r\n$4\r\nPING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return err
	}
	if line != "+PONG\r\n" {
		return fmt.Errorf("PING answered %q", strings.TrimSpace(line))
	}
	return nil
}

// Kill SIGKILLs the node and waits until it has exited. Killing a node that
// is not running does nothing.
func (r *Redis) Kill() error { return r.kill() }

// Start starts the node again, on the same port and directory, and waits
// until it answers PING. Without Options.RedisAOF it comes back empty. A
// node of the sentinel topology comes back as a replica of the primary the
// Sentinels name, or as the primary when they still name it (empty then:
// its replicas resynchronise from it and forget their data too). Starting a
// running node does nothing; after Cluster.Stop it returns ErrStopped.
func (r *Redis) Start(ctx context.Context) error { return r.start(ctx) }

// Volatile reports whether the node comes back empty after Kill and Start:
// true unless it was started with Options.RedisAOF.
func (r *Redis) Volatile() bool { return !r.cl.opts.RedisAOF }

// Pid returns the node's process id, or 0 when it is not running.
func (r *Redis) Pid() int { return r.pid() }

// SetClockOffset sets how far the node's wall clock is ahead of real time
// (behind, for a negative d), at once, while it runs: d = 30*time.Second
// makes it expire keys 30 s early. Only the wall clock moves, as in a real
// clock step; the node's monotonic clock does not. It needs Options.Faketime
// (ErrNoFaketime otherwise). The offset survives Kill and Start.
func (r *Redis) SetClockOffset(d time.Duration) error {
	if !r.faketime {
		return ErrNoFaketime
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped {
		return ErrStopped
	}
	if err := atomicfile.WriteFile(r.tsPath(), []byte(faketimeOffset(d)+"\n")); err != nil {
		return fmt.Errorf("servers: %s: set clock offset: %w", r.name, err)
	}
	return nil
}

// faketimeOffset formats d as a libfaketime relative offset: "+30s", "-1.5s".
func faketimeOffset(d time.Duration) string {
	sign := "+"
	if d < 0 {
		sign, d = "-", -d
	}
	return sign + strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + "s"
}
