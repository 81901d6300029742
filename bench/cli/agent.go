package cli

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"time"

	"github.com/lockbench/lockbench/loadgen/agent"
	"github.com/lockbench/lockbench/servers"
)

// agentOptions are the parsed and checked flags of `lockbench agent`.
type agentOptions struct {
	listen string
	tls    agent.TLSFiles
}

// parseAgent parses and checks the flags of `lockbench agent`. The token
// comes from the environment only (agent.TokenEnv), never a flag: a flag
// shows in the process list.
func parseAgent(args []string, stdout, stderr io.Writer) (agentOptions, error) {
	o := agentOptions{tls: agent.TLSFilesFromEnv()}
	fs := newFlagSet("agent", stderr)
	fs.StringVar(&o.listen, "listen", "", "HOST:PORT to accept coordinators on (required; a host, never all interfaces by default)")
	fs.StringVar(&o.tls.Cert, "tls-cert", o.tls.Cert, "PEM certificate for TLS (or "+agent.CertEnv+")")
	fs.StringVar(&o.tls.Key, "tls-key", o.tls.Key, "PEM key for TLS (or "+agent.KeyEnv+")")
	fs.StringVar(&o.tls.CA, "tls-ca", o.tls.CA, "PEM CA that signed the coordinators' certificates: mutual TLS (or "+agent.CACertEnv+")")
	if err := parseFlags(fs, args, stdout); err != nil {
		return o, err
	}
	if o.listen == "" {
		return o, usageErr("--listen: want HOST:PORT, got nothing")
	}
	if _, _, err := net.SplitHostPort(o.listen); err != nil {
		return o, usageErr("--listen: want HOST:PORT, got %q", o.listen)
	}
	if _, err := o.tls.ServerTLS(); err != nil {
		return o, usageErr("--tls-cert/--tls-key/--tls-ca: %v", err)
	}
	return o, nil
}

// runAgent is `lockbench agent`: run instance processes for coordinators
// until interrupted; every instance dies with its coordinator's session.
func runAgent(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parseAgent(args, stdout, stderr)
	if err != nil {
		return err
	}
	token := os.Getenv(agent.TokenEnv)
	if token == "" {
		return usageErr("%s is not set: the agent refuses to run without a shared token", agent.TokenEnv)
	}
	tc, err := o.tls.ServerTLS()
	if err != nil {
		return err
	}
	a, err := agent.New(agent.Config{Token: token, TLS: tc, Log: stderr})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	tlsNote := "no TLS"
	if tc != nil {
		tlsNote = "TLS"
		if tc.ClientCAs != nil {
			tlsNote = "mutual TLS"
		}
	}
	fmt.Fprintf(stderr, "lockbench agent: listening on %s (agent protocol %d, lockbench %s, %s)\n", ln.Addr(), agent.Protocol, agent.Version(), tlsNote)
	err = a.Serve(ctx, ln)
	if ctx.Err() != nil {
		// Run makes it ErrInterrupted (exit 130), which says no more.
		fmt.Fprintln(stderr, "lockbench agent: stopped; no instance left running")
		return nil
	}
	return err
}

// openAgents opens a session with every agent of --agents (names
// resolved to all their addresses) and says where the servers lockbench
// starts must listen for the agents' instances to reach them: this
// host's address on the way to the agents, which must be one and must
// not be public (servers.CheckHost).
func openAgents(ctx context.Context, list string, stderr io.Writer) (*agent.Pool, string, error) {
	addrs, err := agent.SplitAddrs(ctx, list)
	if err != nil {
		return nil, "", usageErr("--agents: %v", err)
	}
	token := os.Getenv(agent.TokenEnv)
	if token == "" {
		return nil, "", usageErr("--agents: %s is not set: agents refuse a coordinator without their token", agent.TokenEnv)
	}
	tc, err := agent.TLSFilesFromEnv().ClientTLS()
	if err != nil {
		return nil, "", err
	}
	pool, err := agent.Open(ctx, addrs, agent.PoolConfig{DialConfig: agent.DialConfig{Token: token, TLS: tc, Log: stderr}})
	if err != nil {
		return nil, "", err
	}
	hosts := map[string]bool{}
	for _, c := range pool.Conns() {
		hosts[c.LocalIP().String()] = true
		fmt.Fprintf(stderr, "lockbench: agent %s (%s, %d cpus, clock offset %s)\n", c.Addr(), c.Host(), c.CPUs(), c.ClockOffset().Round(time.Microsecond))
	}
	var host string
	for h := range hosts {
		host = h
	}
	if len(hosts) > 1 {
		// Several routes: servers lockbench starts listen on one address
		// only; loopback agents are all reached through 127.0.0.1.
		_ = pool.Close()
		return nil, "", fmt.Errorf("agents are reached from %d local addresses; servers lockbench starts listen on one: give your own server endpoints (LOCKBENCH_REDIS_ADDRS, …)", len(hosts))
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		host = "" // the default, 127.0.0.1, reaches every loopback agent
	}
	if host != "" {
		if err := servers.CheckHost(host); err != nil {
			_ = pool.Close()
			return nil, "", err
		}
	}
	return pool, host, nil
}
