package cli

import (
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/lockbench/lockbench/loadgen"
	"github.com/lockbench/lockbench/loadgen/agent"
)

// The namespaces test's network: a bridge on this host holding
// SUBNET.1 and, for each agent, a veth pair whose other end is SUBNET.N
// inside its own network namespace, SUBNET a private /24 of
// 10.203.0.0/16 that no address of this host is in (freeSubnet).
const nsSubnets = "10.203"

// freeSubnet is a 10.203.X of nsSubnets that no address of this host is
// in, from X = pid mod 255 on: a run killed before its cleanup leaves its
// bridge holding its subnet, and so does a test binary running beside
// this one; a second bridge on it would route to the other's namespaces.
func freeSubnet(t *testing.T) string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Skipf("cannot list this host's addresses: %v", err)
	}
	for i := range 255 {
		subnet := fmt.Sprintf("%s.%d", nsSubnets, (os.Getpid()+i)%255)
		used := false
		for _, a := range addrs {
			if p, ok := a.(*net.IPNet); ok && strings.HasPrefix(p.IP.String(), subnet+".") {
				used = true
			}
		}
		if !used {
			return subnet
		}
	}
	t.Skipf("every /24 of %s.0.0/16 is in use on this host", nsSubnets)
	return ""
}

// ip runs iproute2's ip with args.
func ip(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// netnsAgents makes n network namespaces joined to this host by veth pairs
// on a bridge, and returns their names and addresses; it skips the test
// (one line) when they cannot be made. Everything it made is removed when
// the test ends, by name, whatever happened.
// netnsCalls counts netnsAgents' calls, for unique names.
var netnsCalls atomic.Int64

func netnsAgents(t *testing.T, n int) (names, hosts []string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("network namespaces need root")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("network namespaces need iproute2's ip")
	}
	// Names unique to this process and this call: the kernel removes a
	// deleted namespace's links in the background, so a second call
	// reusing the names could find them still there.
	tag := fmt.Sprintf("%d%d", os.Getpid()%1_000_000, netnsCalls.Add(1)%10)
	bridge := "lbb" + tag
	nsSubnet := freeSubnet(t)
	var links []string
	// The host ends go by name (which takes their peers with them), then
	// the namespaces and the bridge.
	t.Cleanup(func() {
		for _, l := range links {
			_ = ip("link", "delete", l)
		}
		for _, ns := range names {
			_ = ip("netns", "delete", ns)
		}
		_ = ip("link", "delete", bridge)
	})
	if err := ip("link", "add", bridge, "type", "bridge"); err != nil {
		t.Skipf("cannot make a bridge: %v", err)
	}
	steps := [][]string{
		{"addr", "add", nsSubnet + ".1/24", "dev", bridge},
		{"link", "set", bridge, "up"},
	}
	for i := range n {
		ns, host, peer := fmt.Sprintf("lb14-%s-%d", tag, i), fmt.Sprintf("lbh%s%d", tag, i), fmt.Sprintf("lbn%s%d", tag, i)
		addr := fmt.Sprintf("%s.%d", nsSubnet, i+2)
		if err := ip("netns", "add", ns); err != nil {
			t.Skipf("cannot make a network namespace: %v", err)
		}
		names = append(names, ns)
		hosts = append(hosts, addr)
		links = append(links, host)
		steps = append(steps,
			[]string{"link", "add", host, "type", "veth", "peer", "name", peer},
			[]string{"link", "set", host, "master", bridge, "up"},
			[]string{"link", "set", peer, "netns", ns},
			[]string{"-n", ns, "addr", "add", addr + "/24", "dev", peer},
			[]string{"-n", ns, "link", "set", peer, "up"},
			[]string{"-n", ns, "link", "set", "lo", "up"},
		)
	}
	for _, s := range steps {
		if err := ip(s...); err != nil {
			t.Fatal(err)
		}
	}
	return names, hosts
}

// TestAgentsAcrossNamespaces: agents in two network namespaces, the
// coordinator outside, the servers it starts on the bridge's address (the
// only one the namespaces reach): the sample of verdicts (setnx, fencing;
// none, pause) and the setnx run are those of local process
// instances, with either store transport (sequenced: the Enters one-way
// across the veth pairs).
func TestAgentsAcrossNamespaces(t *testing.T) {
	if testing.Short() {
		t.Skip("starts agents, a Redis node and instance processes; skipped with -short")
	}
	names, hosts := netnsAgents(t, 2)
	var agents []*agentProc
	for i, ns := range names {
		// Stopped before the namespaces go (cleanups run last first).
		agents = append(agents, startAgentProc(t, ns, hosts[i]+":7070"))
	}
	checkAgentsMatchProcess(t, agents)
	t.Run("sequenced", func(t *testing.T) {
		checkAgentsMatchProcess(t, agents, "--store-transport", "sequenced")
	})
}

// TestAgentsAcrossNamespacesPostgres: the Postgres lockbench starts is
// reached from agents in network namespaces too (it listens on the
// bridge's address and admits its subnet): pg-onconflict takes its locks
// there, pg-unique's instances open their transactions there, and both
// process every payment without an error of reach.
func TestAgentsAcrossNamespacesPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("starts agents, Postgres and instance processes; skipped with -short")
	}
	names, hosts := netnsAgents(t, 2)
	var addrs []string
	for i, ns := range names {
		// Stopped before the namespaces go (cleanups run last first).
		addrs = append(addrs, startAgentProc(t, ns, hosts[i]+":7070").addr)
	}
	t.Setenv(agent.TokenEnv, agentsToken)
	dir := t.TempDir()
	runCommand(t, "run", "--strategy", "pg-onconflict,pg-unique", "--store", "postgres", "--agents", strings.Join(addrs, ","),
		"--instances", "2", "--payments", "600", "--rate", "300", "--out", dir)
	ss := readSummaries(t, dir)
	if len(ss) != 2 {
		t.Fatalf("summary.json has %d runs; want 2", len(ss))
	}
	for _, s := range ss {
		// A holder a busy machine stalled past its TTL finds its lock
		// gone at release (lost_lock): a timing, not a server out of reach.
		errs := maps.Clone(s.Errors)
		delete(errs, loadgen.ErrClassLostLock)
		if s.Processed != s.Payments || len(errs) != 0 || s.Unsafe || s.Params.InstanceMode != string(loadgen.InstanceProcess) {
			t.Errorf("%s on agents in namespaces: processed %d/%d, errors %v, unsafe %v, instance mode %q; want all processed, no errors but lost_lock, safe, process",
				s.Strategy, s.Processed, s.Payments, s.Errors, s.Unsafe, s.Params.InstanceMode)
		}
		if len(s.Errors) != 0 {
			t.Logf("%s: errors %v", s.Strategy, s.Errors)
		}
	}
}
