// Package etcdchild turns a process into one etcd member (built from
// go.etcd.io/etcd/server/v3/embed) when package servers started it as one.
// Only the lockbench binary imports it: keeping the etcd server out of every
// test binary keeps them small and keeps -race builds fast. Test processes
// find an etcd launcher through LOCKBENCH_ETCD_BIN or build the lockbench
// binary once (see servers' etcdLauncher).
package etcdchild

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"

	"go.etcd.io/etcd/server/v3/embed"

	"github.com/lockbench/lockbench/servers"
)

// init turns this process into an etcd member when it was started as one by
// servers (it never returns then), and otherwise tells servers that this
// binary can be its own etcd launcher.
func init() {
	if os.Getenv(servers.ChildEnv) != servers.ChildEtcd {
		servers.MarkEtcdLinked()
		return
	}
	os.Exit(runEtcdChild())
}

// runEtcdChild runs one etcd member until SIGTERM or SIGINT and returns the
// exit code.
func runEtcdChild() int {
	// Before StartEtcd: a signal that arrives while it starts is kept.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	cfg, err := etcdConfigFromEnv()
	if err != nil {
		fmt.Fprintf(os.Stderr, "lockbench etcd child: %v\n", err)
		return 2
	}
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		fmt.Fprintf(os.Stderr, "lockbench etcd child: %v\n", err)
		return 1
	}
	select {
	case <-sig:
		closeBounded(e)
		return 0
	case err := <-e.Err():
		fmt.Fprintf(os.Stderr, "lockbench etcd child: %v\n", err)
		closeBounded(e)
		return 1
	case <-e.Server.StopNotify():
		fmt.Fprintln(os.Stderr, "lockbench etcd child: server stopped")
		closeBounded(e)
		return 1
	}
}

// closeBounded closes e but gives up after servers.EtcdCloseTimeout. A graceful
// close waits for clients' open gRPC streams (a lock session's keepalive,
// a watch) for up to the request timeout, 7 s by default, and, in a cluster
// whose members all stop at once, for a leadership transfer that cannot
// happen. Nothing is lost by exiting earlier: what is committed is in the
// WAL.
func closeBounded(e *embed.Etcd) {
	done := make(chan struct{})
	go func() {
		e.Close()
		close(done)
	}()
	t := time.NewTimer(servers.EtcdCloseTimeout)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
}

// etcdConfigFromEnv builds the member's configuration from the environment
// Cluster set.
func etcdConfigFromEnv() (*embed.Config, error) {
	get := func(k string) (string, error) {
		v := os.Getenv(k)
		if v == "" {
			return "", fmt.Errorf("%s is not set", k)
		}
		return v, nil
	}
	var errs []error
	must := func(k string) string {
		v, err := get(k)
		errs = append(errs, err)
		return v
	}
	name, dir := must(servers.EnvChildEtcdName), must(servers.EnvChildEtcdDir)
	clientURL, peerURL := must(servers.EnvChildEtcdClientURL), must(servers.EnvChildEtcdPeerURL)
	initial, token := must(servers.EnvChildEtcdCluster), must(servers.EnvChildEtcdClusterToken)
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	cu, err := url.Parse(clientURL)
	if err != nil {
		return nil, err
	}
	pu, err := url.Parse(peerURL)
	if err != nil {
		return nil, err
	}

	cfg := embed.NewConfig()
	cfg.Name = name
	cfg.Dir = dir
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{*cu}, []url.URL{*cu}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{*pu}, []url.URL{*pu}
	cfg.InitialCluster = initial
	cfg.InitialClusterToken = token
	cfg.ClusterState = embed.ClusterStateFlagNew // ignored once dir holds data
	cfg.LogLevel = "error"
	cfg.LogOutputs = []string{"stderr"} // the parent sends it to server.log
	// A local benchmark server on a possibly slow disk: fsync would make
	// every lock operation wait for the disk. The data survives a killed
	// member (it is in the page cache), not a power cut.
	cfg.UnsafeNoFsync = true
	// etcd keeps every revision until it is compacted, and it compacts
	// nothing by default: each lock taken and released adds two to the
	// index in memory, which grew by 0.6 MB a second under an etcd run
	// and would reach the backend quota in hours. As operators run it
	// (Kubernetes compacts every 5 minutes), history older than a minute
	// is dropped; no strategy reads an old revision.
	cfg.AutoCompactionMode = embed.CompactorModePeriodic
	cfg.AutoCompactionRetention = "1m"
	if cert := os.Getenv(servers.EnvChildEtcdCertFile); cert != "" {
		// Clients over TLS only, each with a certificate the CA signed
		// (client-cert-auth); the peers stay plain on loopback.
		cfg.ClientTLSInfo.CertFile = cert
		cfg.ClientTLSInfo.KeyFile = os.Getenv(servers.EnvChildEtcdKeyFile)
		cfg.ClientTLSInfo.TrustedCAFile = os.Getenv(servers.EnvChildEtcdCAFile)
		cfg.ClientTLSInfo.ClientCertAuth = cfg.ClientTLSInfo.TrustedCAFile != ""
	}
	return cfg, nil
}
