package servers

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

const (
	// DefaultZKMembers is the ZooKeeper ensemble size when
	// Options.ZKMembers is 0.
	DefaultZKMembers = 1
	// MaxZKMembers is the largest ensemble Start will form.
	MaxZKMembers = 7
	// ZKTickTime is the tickTime of a locally started ZooKeeper: 100ms.
	// ZooKeeper counts every timeout in ticks and checks for expired
	// sessions once a tick, so a short tick lets short TTLs mean what they
	// say (the default 2s tick would raise every session timeout to 4s).
	ZKTickTime = 100 * time.Millisecond
	// ZKMinSessionTimeout is the shortest session timeout a locally started
	// ZooKeeper grants, 2 × ZKTickTime (ZooKeeper's own default ratio): a
	// client asking for less gets this.
	ZKMinSessionTimeout = 2 * ZKTickTime
	// ZKMaxSessionTimeout is the longest session timeout it grants: 10
	// minutes (ZooKeeper's default, 20 ticks, would be 2s here).
	ZKMaxSessionTimeout = 10 * time.Minute

	// zkReadyTimeout bounds the wait for a member to serve: a JVM start
	// (about 2s on an idle machine, far more on a loaded one) and, for an
	// ensemble, a leader election.
	zkReadyTimeout = 60 * time.Second
	// zkInitLimit and zkSyncLimit are in ticks: how long a follower may take
	// to connect and sync to a new leader (5s), and how far it may lag
	// behind it (2s) before it is dropped. Generous for a 100ms tick, so
	// that a busy machine or a GC pause does not break the ensemble.
	zkInitLimit = 50
	zkSyncLimit = 20
	// zkHeap is the JVM's maximum heap: far more than lock znodes need.
	zkHeap = "256m"
	// zkMain is the class that runs a server, standalone or in an ensemble.
	zkMain = "org.apache.zookeeper.server.quorum.QuorumPeerMain"
)

// zkState is the implementation part of ZKMember.
type zkState struct {
	server
	myid    int // 1-based, as in server.N lines and the myid file
	dir     string
	cfgPath string
	// peerPort and electionPort are the ensemble's ports (unused alone).
	peerPort, electionPort int
}

func (c *Cluster) startZooKeeper(ctx context.Context, n int, bins binaries) error {
	var err error
	for range startAttempts {
		if err = c.startZooKeeperOnce(ctx, n, bins); !addrInUse(err) {
			break
		}
	}
	return err
}

// startZooKeeperOnce starts n members on fresh ports and waits until each
// serves. An ensemble's members start together: none serves before a
// quorum has elected a leader. On failure it kills what it started, so a
// retry starts clean.
func (c *Cluster) startZooKeeperOnce(ctx context.Context, n int, bins binaries) error {
	ports, err := freePorts(3 * n)
	if err != nil {
		return err
	}
	members := make([]*ZKMember, n)
	for i := range members {
		name := fmt.Sprintf("zookeeper-%d", i)
		// Clients on Options.Host; the quorum's own traffic on loopback.
		m := &ZKMember{Addr: net.JoinHostPort(c.host(), strconv.Itoa(ports[3*i]))}
		m.myid, m.peerPort, m.electionPort = i+1, ports[3*i+1], ports[3*i+2]
		m.dir = filepath.Join(c.dir, name)
		m.cfgPath = filepath.Join(m.dir, "zoo.cfg")
		m.server = server{
			name:    name,
			logPath: filepath.Join(m.dir, "server.log"),
			stopSig: syscall.SIGTERM,
			timeout: zkReadyTimeout,
			build:   func() (*exec.Cmd, error) { return m.command(bins), nil },
			ready:   func(ctx context.Context) error { return zkServing(ctx, m.Addr) },
			desc:    func() string { return name + " (" + m.Addr + ")" },
			cl:      &c.state,
		}
		members[i] = m
	}
	for _, m := range members {
		if err := m.prepare(members); err != nil {
			return fmt.Errorf("servers: %s: %w", m.name, err)
		}
	}
	c.ZooKeeper = members
	if err := startMembers(ctx, members); err != nil {
		c.ZooKeeper = nil
		return err
	}
	return nil
}

// prepare writes the member's directory afresh: its configuration and, in
// its data directory, the myid file that tells it which server.N it is.
func (m *ZKMember) prepare(members []*ZKMember) error {
	if err := os.RemoveAll(m.dir); err != nil { // a failed attempt's leftovers
		return err
	}
	data := filepath.Join(m.dir, "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(data, "myid"), []byte(strconv.Itoa(m.myid)+"\n"), 0o644); err != nil {
		return err
	}
	return os.WriteFile(m.cfgPath, []byte(m.config(data, members)), 0o644)
}

// config is the member's zoo.cfg. Keys ZooKeeper does not know as settings
// (forceSync, preAllocSize) become zookeeper.* system properties.
func (m *ZKMember) config(dataDir string, members []*ZKMember) string {
	host, port, _ := net.SplitHostPort(m.Addr)
	lines := []string{
		"tickTime=" + strconv.Itoa(int(ZKTickTime/time.Millisecond)),
		"initLimit=" + strconv.Itoa(zkInitLimit),
		"syncLimit=" + strconv.Itoa(zkSyncLimit),
		"minSessionTimeout=" + strconv.Itoa(int(ZKMinSessionTimeout/time.Millisecond)),
		"maxSessionTimeout=" + strconv.Itoa(int(ZKMaxSessionTimeout/time.Millisecond)),
		"dataDir=" + dataDir,
		"clientPort=" + port,
		"clientPortAddress=" + host,
		// No limit on connections from one address: every instance and
		// contender of a run connects from 127.0.0.1 (the default is 60).
		"maxClientCnxns=0",
		// The AdminServer would take port 8080.
		"admin.enableServer=false",
		// srvr is the readiness probe.
		"4lw.commands.whitelist=srvr,ruok,stat,conf,mntr",
		// Benchmark settings, as for etcd and PostgreSQL: the transaction
		// log is written but not fsynced (it survives a killed process, not
		// a power cut), and preallocated in 4MB steps instead of 64MB.
		"forceSync=no",
		"preAllocSize=4096",
	}
	if len(members) > 1 {
		for _, o := range members {
			lines = append(lines, fmt.Sprintf("server.%d=127.0.0.1:%d:%d", o.myid, o.peerPort, o.electionPort))
		}
	}
	return strings.Join(lines, "\n") + "\n"
}

// command runs the server in the foreground straight from java, not through
// zkServer.sh, so that the process lockbench watches (and Pdeathsig kills)
// is the JVM itself.
func (m *ZKMember) command(bins binaries) *exec.Cmd {
	cmd := exec.Command(bins.java,
		"-Xmx"+zkHeap,
		// The serial collector: the smallest footprint and the fastest
		// start, with pauses of a few ms on a heap this size.
		"-XX:+UseSerialGC",
		"-Djava.net.preferIPv4Stack=true",
		"-Dorg.slf4j.simpleLogger.showDateTime=true",
		"-Dorg.slf4j.simpleLogger.dateTimeFormat=yyyy-MM-dd'T'HH:mm:ss.SSS",
		"-cp", bins.zkClasspath,
		zkMain, m.cfgPath,
	)
	cmd.Dir = m.dir
	cmd.Env = childEnv()
	return cmd
}

// zkServing sends the srvr four-letter word and expects a Mode line: a
// member that has no quorum answers "not currently serving requests".
func zkServing(ctx context.Context, addr string) error {
	out, err := zkFourLetter(ctx, addr, "srvr")
	if err != nil {
		return err
	}
	for line := range strings.SplitSeq(out, "\n") {
		if mode, ok := strings.CutPrefix(line, "Mode: "); ok {
			switch strings.TrimSpace(mode) {
			case "standalone", "leader", "follower":
				return nil
			}
		}
	}
	return fmt.Errorf("srvr answered %q", strings.TrimSpace(lastLines(out, 1)))
}

// zkFourLetter sends a four-letter word (it must be in the server's
// 4lw.commands.whitelist) and returns the answer, read until the server
// closes the connection.
func zkFourLetter(ctx context.Context, addr, word string) (string, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	if _, err := conn.Write([]byte(word)); err != nil {
		return "", err
	}
	out, err := io.ReadAll(io.LimitReader(conn, 64<<10))
	return string(out), err
}

// Kill SIGKILLs the member and waits until it has exited. Killing a member
// that is not running does nothing.
func (m *ZKMember) Kill() error { return m.kill() }

// Start starts the member again with its data directory (snapshots and
// transaction log: znodes and sessions survive) and waits until it serves,
// which for an ensemble member needs a quorum. Sessions that were alive when
// the member went down get a full session timeout from the restart to
// reconnect. Starting a running member does nothing; after Cluster.Stop it
// returns ErrStopped.
func (m *ZKMember) Start(ctx context.Context) error { return m.start(ctx) }
