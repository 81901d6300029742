package servers

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

const (
	// DefaultEtcdMembers is the etcd cluster size when Options.EtcdMembers
	// is 0.
	DefaultEtcdMembers = 1
	// MaxEtcdMembers is the largest etcd cluster Start will form.
	MaxEtcdMembers = 7
	// etcdReadyTimeout bounds the wait for a member to report healthy (for a
	// cluster, that includes electing a leader).
	etcdReadyTimeout = 20 * time.Second
	// EtcdCloseTimeout bounds a member's graceful close on SIGTERM.
	EtcdCloseTimeout = time.Second
)

// Environment of an etcd child process: the lockbench binary (or
// LOCKBENCH_ETCD_BIN) started with ChildEnv=ChildEtcd runs one member, in
// package etcdchild, configured by the EnvChildEtcd* variables.
const (
	ChildEnv                 = "LOCKBENCH_CHILD"
	ChildEtcd                = "etcd"
	EnvChildEtcdName         = "LOCKBENCH_CHILD_ETCD_NAME"
	EnvChildEtcdDir          = "LOCKBENCH_CHILD_ETCD_DIR"
	EnvChildEtcdClientURL    = "LOCKBENCH_CHILD_ETCD_CLIENT_URL"
	EnvChildEtcdPeerURL      = "LOCKBENCH_CHILD_ETCD_PEER_URL"
	EnvChildEtcdCluster      = "LOCKBENCH_CHILD_ETCD_INITIAL_CLUSTER"
	EnvChildEtcdClusterToken = "LOCKBENCH_CHILD_ETCD_CLUSTER_TOKEN"
	// EnvChildEtcdCertFile, EnvChildEtcdKeyFile and EnvChildEtcdCAFile,
	// when set, serve clients over TLS only and require client
	// certificates signed by the CA (Options.Secure).
	EnvChildEtcdCertFile = "LOCKBENCH_CHILD_ETCD_CERT_FILE"
	EnvChildEtcdKeyFile  = "LOCKBENCH_CHILD_ETCD_KEY_FILE"
	EnvChildEtcdCAFile   = "LOCKBENCH_CHILD_ETCD_CA_FILE"
)

// etcdState is the implementation part of EtcdMember.
type etcdState struct {
	server
	peerURL string
	dataDir string
	// health is the client of the member's /health probes: healthClient,
	// or one with the CA and client certificate of Options.Secure.
	health *http.Client
}

// healthClient probes members without keeping connections around.
var healthClient = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}

func (c *Cluster) startEtcd(ctx context.Context, n int, bins binaries) error {
	health := healthClient
	if c.opts.Secure.tls() {
		tc, err := c.opts.Secure.clientTLS()
		if err != nil {
			return err
		}
		health = &http.Client{Transport: &http.Transport{DisableKeepAlives: true, TLSClientConfig: tc}}
	}
	var err error
	for attempt := range startAttempts {
		if err = c.startEtcdOnce(ctx, n, bins, attempt, health); !addrInUse(err) {
			break
		}
	}
	if err == nil && c.opts.Secure.auth() {
		err = c.enableEtcdAuth(ctx)
	}
	return err
}

// startEtcdOnce starts n members on fresh ports and waits until all are
// healthy. Members must start together: none is healthy before a quorum is.
// On failure it kills what it started, so a retry starts clean.
func (c *Cluster) startEtcdOnce(ctx context.Context, n int, bins binaries, attempt int, health *http.Client) error {
	scheme := "http://"
	if c.opts.Secure.tls() {
		scheme = "https://"
	}
	ports, err := freePorts(2 * n)
	if err != nil {
		return err
	}
	members := make([]*EtcdMember, n)
	var initial []string
	for i := range members {
		name := fmt.Sprintf("etcd-%d", i)
		// Clients (instances on agents among them) on Options.Host;
		// the members' own traffic on loopback.
		m := &EtcdMember{ClientURL: scheme + net.JoinHostPort(c.host(), strconv.Itoa(ports[2*i]))}
		m.health = health
		m.peerURL = "http://" + hostPort(ports[2*i+1])
		dir := filepath.Join(c.dir, name)
		m.dataDir = filepath.Join(dir, "data")
		if err := os.RemoveAll(dir); err != nil { // a failed attempt's leftovers
			return fmt.Errorf("servers: %w", err)
		}
		if err := os.Mkdir(dir, 0o755); err != nil {
			return fmt.Errorf("servers: %w", err)
		}
		m.server = server{
			name:    name,
			logPath: filepath.Join(dir, "server.log"),
			stopSig: syscall.SIGTERM,
			timeout: etcdReadyTimeout,
			ready:   func(ctx context.Context) error { return etcdHealthy(ctx, m.health, m.ClientURL) },
			desc:    func() string { return name + " (" + m.ClientURL + ")" },
			cl:      &c.state,
		}
		members[i] = m
		initial = append(initial, name+"="+m.peerURL)
	}
	token := fmt.Sprintf("%s-%d", filepath.Base(c.dir), attempt)
	for _, m := range members {
		env := childEnv(
			ChildEnv+"="+ChildEtcd,
			EnvChildEtcdName+"="+m.name,
			EnvChildEtcdDir+"="+m.dataDir,
			EnvChildEtcdClientURL+"="+m.ClientURL,
			EnvChildEtcdPeerURL+"="+m.peerURL,
			EnvChildEtcdCluster+"="+strings.Join(initial, ","),
			EnvChildEtcdClusterToken+"="+token,
		)
		if sec := c.opts.Secure; sec.tls() {
			env = append(env,
				EnvChildEtcdCertFile+"="+sec.Certs.ServerCert,
				EnvChildEtcdKeyFile+"="+sec.Certs.ServerKey,
				EnvChildEtcdCAFile+"="+sec.Certs.CA)
		}
		m.build = func() (*exec.Cmd, error) {
			cmd := exec.Command(bins.self)
			cmd.Env = env
			return cmd, nil
		}
	}
	c.Etcd = members
	if err := startMembers(ctx, members); err != nil {
		c.Etcd = nil
		return err
	}
	return nil
}

// etcdHealthy asks the member's /health endpoint, which answers true only
// when the cluster has a leader and serves a read.
func etcdHealthy(ctx context.Context, client *http.Client, clientURL string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, clientURL+"/health", nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"health":"true"`) {
		return fmt.Errorf("/health: %s %s", resp.Status, strings.TrimSpace(string(body)))
	}
	return nil
}

// Kill SIGKILLs the member and waits until it has exited. Killing a member
// that is not running does nothing.
func (m *EtcdMember) Kill() error { return m.kill() }

// Start starts the member again with its data directory (the raft log is its
// persistence) and waits until it reports healthy, which needs a quorum of
// the cluster. Starting a running member does nothing; after Cluster.Stop it
// returns ErrStopped.
func (m *EtcdMember) Start(ctx context.Context) error { return m.start(ctx) }
