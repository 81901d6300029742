package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lockbench/lockbench/internal/syncbuf"

	"github.com/lockbench/lockbench/loadgen"
	"github.com/lockbench/lockbench/loadgen/agent"
	"github.com/lockbench/lockbench/results"
	"github.com/lockbench/lockbench/servers"
)

// agentsToken is the token the agents of these tests share with the
// in-process coordinator.
const agentsToken = "agents-test-token-8f3a"

// agentsRunTimeout bounds each command these tests run.
const agentsRunTimeout = 90 * time.Second

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// lockbenchBin is the lockbench binary the agents run: the Makefile's
// (LOCKBENCH_ETCD_BIN is bin/lockbench), or one built once for the tests.
func lockbenchBin(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		if p := os.Getenv("LOCKBENCH_ETCD_BIN"); p != "" {
			binPath = p
			return
		}
		dir, err := os.MkdirTemp("", "lockbench-agents-test-")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "lockbench")
		cmd := exec.Command("go", "build", "-o", binPath, "github.com/lockbench/lockbench/cmd/lockbench")
		if out, err := cmd.CombinedOutput(); err != nil {
			binErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

// agentProc is a `lockbench agent` process the test started.
type agentProc struct {
	addr string
	cmd  *exec.Cmd
	log  *syncbuf.Buffer
}

// startAgentProc starts `lockbench agent --listen addr` with flags, in network
// namespace ns unless it is "", and waits until it listens. It is killed
// (by its pid) when the test ends.
func startAgentProc(t *testing.T, ns, addr string, flags ...string) *agentProc {
	t.Helper()
	bin := lockbenchBin(t)
	args := append([]string{bin, "agent", "--listen", addr}, flags...)
	if ns != "" {
		args = append([]string{"ip", "netns", "exec", ns}, args...)
	}
	// ip netns exec execs the agent: the pid is the agent's.
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append(os.Environ(), agent.TokenEnv+"="+agentsToken)
	a := &agentProc{addr: addr, cmd: cmd, log: &syncbuf.Buffer{}}
	cmd.Stdout, cmd.Stderr = a.log, a.log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.stop)
	for end := time.Now().Add(10 * time.Second); !strings.Contains(a.log.String(), "listening on"); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("agent %s did not listen within 10s:\n%s", addr, a.log)
		}
	}
	return a
}

// stop ends the agent (SIGTERM, then SIGKILL after 10s) and reaps it.
func (a *agentProc) stop() {
	if a.cmd.ProcessState != nil {
		return
	}
	_ = a.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = a.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = a.cmd.Process.Kill()
		<-done
	}
}

// kill kills the agent at once (SIGKILL: no goodbye to its coordinator).
func (a *agentProc) kill() {
	_ = a.cmd.Process.Kill()
	_ = a.cmd.Wait()
}

// started counts the instances the agent says it started.
func (a *agentProc) started() int { return strings.Count(a.log.String(), "started (pid") }

// freeAddr is host:port with a port free on host a moment ago.
func freeAddr(t *testing.T, host string) string {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// runCommand runs a lockbench command in-process with the agents' token
// and returns its stderr; it fails the test on an error or a timeout.
func runCommand(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), agentsRunTimeout)
	defer cancel()
	var out, errb bytes.Buffer
	err := Run(ctx, args, &out, &errb)
	t.Logf("lockbench %s:\n%s%s", strings.Join(args, " "), out.String(), errb.String())
	if ctx.Err() != nil {
		t.Fatalf("lockbench %s did not finish within %s", args[0], agentsRunTimeout)
	}
	if err != nil {
		t.Fatalf("lockbench %s: %v", args[0], err)
	}
	return errb.String()
}

// verdictSample runs `verdicts` on the sample of cells (setnx and
// fencing, without a fault and under pause, seed 3) with extra flags, has
// the second judge re-check it from the runs' histories, and returns each
// cell's verdict (unsafe) by strategy/fault/fencing/variant.
func verdictSample(t *testing.T, extra ...string) map[string]bool {
	t.Helper()
	dir := t.TempDir()
	args := append([]string{"verdicts", "--strategy", "setnx,fencing", "--fault", "none,pause", "--seed", "3", "--history", "--out", dir}, extra...)
	runCommand(t, args...)
	checkAgrees(t, dir, "lockbench_acct") // on agents too, their clocks moved onto ours
	f, err := os.Open(filepath.Join(dir, results.VerdictsFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ss, err := results.ReadJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, s := range ss {
		got[s.Strategy+"/"+s.Fault+"/"+onOff(s.Fencing)+"/"+s.Variant] = s.Unsafe
	}
	return got
}

// The local baselines, run once for the package's tests.
var (
	localOnce     sync.Once
	localVerdicts map[string]bool
	localRunOnce  sync.Once
	localRun      results.Summary
)

// localVerdictSample is verdictSample with local instances (process
// instances under pause), once for the package's tests.
func localVerdictSample(t *testing.T) map[string]bool {
	t.Helper()
	localOnce.Do(func() { localVerdicts = verdictSample(t) })
	if localVerdicts == nil {
		t.Fatal("the local verdict sample failed (see the first test that ran it)")
	}
	return localVerdicts
}

// doneWhenRun is the issue's check: `run --strategy setnx --instances 4
// --deliveries 2 --payments 3000` with extra flags; it returns the run.
func doneWhenRun(t *testing.T, extra ...string) results.Summary {
	t.Helper()
	dir := t.TempDir()
	args := append([]string{"run", "--strategy", "setnx", "--instances", "4", "--deliveries", "2", "--payments", "3000", "--out", dir}, extra...)
	runCommand(t, args...)
	ss := readSummaries(t, dir)
	if len(ss) != 1 {
		t.Fatalf("summary.json has %d runs; want 1", len(ss))
	}
	return ss[0]
}

// checkAgentsMatchProcess runs the done-when check and the verdict sample
// on the agents (with the extra flags) and compares them with local
// process instances (synchronous, the default).
func checkAgentsMatchProcess(t *testing.T, agents []*agentProc, extra ...string) {
	t.Helper()
	t.Setenv(agent.TokenEnv, agentsToken)
	var addrs []string
	for _, a := range agents {
		addrs = append(addrs, a.addr)
	}
	list := strings.Join(addrs, ",")
	before := map[*agentProc]int{}
	for _, a := range agents {
		before[a] = a.started()
	}

	onAgents := doneWhenRun(t, append([]string{"--agents", list}, extra...)...)
	localRunOnce.Do(func() { localRun = doneWhenRun(t, "--instance-mode", "process") })
	local := localRun
	if local.Payments == 0 {
		t.Fatal("the local process run failed (see the first test that ran it)")
	}
	if onAgents.Unsafe != local.Unsafe || onAgents.Processed != local.Processed || len(onAgents.Errors) != 0 {
		t.Errorf("setnx on agents: unsafe %v, processed %d, errors %v; with process instances: unsafe %v, processed %d; want the same and no errors",
			onAgents.Unsafe, onAgents.Processed, onAgents.Errors, local.Unsafe, local.Processed)
	}
	for _, a := range agents {
		if got := a.started() - before[a]; got != 2 {
			t.Errorf("agent %s started %d instances; want 2 of the 4 (round robin)", a.addr, got)
		}
	}
	transport := loadgen.TransportSync
	if slices.Contains(extra, loadgen.TransportSequenced) {
		transport = loadgen.TransportSequenced
	}
	if got := onAgents.Params.StoreTransport; got != transport {
		t.Errorf("setnx on agents: store transport %q; want %q", got, transport)
	}

	got, want := verdictSample(t, append([]string{"--agents", list}, extra...)...), localVerdictSample(t)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("verdicts on agents:\n%v\nwith local instances:\n%v\nwant the same", got, want)
	}
	if !want["setnx/pause/off/"] || want["fencing/pause/on/"] {
		t.Errorf("local verdicts %v: want setnx unsafe and fencing (on) safe under pause", want)
	}
}

// TestAgentsOnLoopback is the quick variant: two agents on other loopback
// addresses (127.0.0.2, 127.0.0.3) give the verdicts of local process
// instances.
func TestAgentsOnLoopback(t *testing.T) {
	a, b := loopbackAgents(t)
	checkAgentsMatchProcess(t, []*agentProc{a, b})
}

// TestAgentsSequenced: with --store-transport sequenced, instances on
// agents send their Enters one-way and wait only for their Finishes (one
// round trip a critical section): the same verdicts as local process
// instances, pause included (its trap turns the Enters back into waiting
// ones), every run recorded as sequenced; and the nolock control is
// caught through it.
func TestAgentsSequenced(t *testing.T) {
	a, b := loopbackAgents(t)
	checkAgentsMatchProcess(t, []*agentProc{a, b}, "--store-transport", "sequenced")
	list := a.addr + "," + b.addr
	dir := t.TempDir()
	runCommand(t, "run", "--strategy", "nolock,setnx", "--agents", list, "--store-transport", "sequenced",
		"--instances", "2", "--deliveries", "2", "--payments", "600", "--out", dir)
	ss := readSummaries(t, dir)
	if len(ss) != 2 {
		t.Fatalf("summary.json has %d runs; want 2", len(ss))
	}
	for _, s := range ss {
		if s.Params.StoreTransport != loadgen.TransportSequenced || len(s.Errors) != 0 || s.Processed != 600 {
			t.Errorf("%s: store transport %q, errors %v, processed %d; want sequenced, none, 600", s.Strategy, s.Params.StoreTransport, s.Errors, s.Processed)
		}
		if want := s.Strategy == "nolock"; s.Unsafe != want || want && s.Duplicates == 0 {
			t.Errorf("%s through the sequenced store on agents: unsafe %v, %d duplicates; want unsafe %v", s.Strategy, s.Unsafe, s.Duplicates, want)
		}
	}
}

// loopbackAgents starts two agents, on 127.0.0.2 and 127.0.0.3; it skips
// the test with -short or when those addresses cannot be listened on.
func loopbackAgents(t *testing.T) (a, b *agentProc) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts agents, a Redis node and instance processes; skipped with -short")
	}
	for _, h := range []string{"127.0.0.2", "127.0.0.3"} {
		ln, err := net.Listen("tcp", h+":0")
		if err != nil {
			t.Skipf("cannot listen on %s: %v", h, err)
		}
		ln.Close()
	}
	return startAgentProc(t, "", freeAddr(t, "127.0.0.2")), startAgentProc(t, "", freeAddr(t, "127.0.0.3"))
}

// TestAgentsSlow: slow reaches instances on agents (the order rides on
// the store's answer to the caught Enter): setnx is caught out, the
// watchdog's renewals, running on the agent, keep its lease alive; the
// instances were processes on the agents, not goroutines here.
func TestAgentsSlow(t *testing.T) {
	a, b := loopbackAgents(t)
	t.Setenv(agent.TokenEnv, agentsToken)
	dir := t.TempDir()
	runCommand(t, "run", "--strategy", "setnx,setnx-watchdog", "--fault", "slow", "--agents", a.addr+","+b.addr,
		"--instances", "2", "--deliveries", "2", "--ttl", "1s", "--hold", "5ms", "--rate", "100", "--payments", "200", "--out", dir)
	want := map[string]bool{"setnx": true, "setnx-watchdog": false} // unsafe
	ss := readSummaries(t, dir)
	if len(ss) != len(want) {
		t.Fatalf("summary.json has %d runs; want %d", len(ss), len(want))
	}
	for _, s := range ss {
		slowed := false
		for _, e := range s.FaultEvents {
			slowed = slowed || strings.Contains(e.What, "critical section made to last")
		}
		if !slowed || s.Params.InstanceMode != string(loadgen.InstanceProcess) {
			t.Errorf("%s: fault events %v, instance mode %q; want a section made to last D, process", s.Strategy, s.FaultEvents, s.Params.InstanceMode)
		}
		if s.Unsafe != want[s.Strategy] {
			t.Errorf("%s under slow on agents: unsafe %v; want %v", s.Strategy, s.Unsafe, want[s.Strategy])
		}
	}
	for _, ag := range []*agentProc{a, b} {
		if got := ag.started(); got != len(want) {
			t.Errorf("agent %s started %d instances; want %d (one per run)", ag.addr, got, len(want))
		}
	}
}

// TestAgentsTLS: with mutual TLS on the agent link (the coordinator checks
// the agent's certificate, the agent the coordinator's), a run on an agent
// processes every payment, its instances reaching the store over TLS too:
// the store's only listener for them speaks TLS (store.ListenPinned).
func TestAgentsTLS(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an agent, a Redis node and instance processes; skipped with -short")
	}
	host := "127.0.0.2"
	ln, err := net.Listen("tcp", host+":0")
	if err != nil {
		t.Skipf("cannot listen on %s: %v", host, err)
	}
	ln.Close()
	certs, err := servers.GenerateCA(t.TempDir(), host)
	if err != nil {
		t.Fatal(err)
	}
	a := startAgentProc(t, "", freeAddr(t, host), "--tls-cert", certs.ServerCert, "--tls-key", certs.ServerKey, "--tls-ca", certs.CA)
	t.Setenv(agent.TokenEnv, agentsToken)
	t.Setenv(agent.CACertEnv, certs.CA)
	t.Setenv(agent.CertEnv, certs.ClientCert)
	t.Setenv(agent.KeyEnv, certs.ClientKey)
	dir := t.TempDir()
	runCommand(t, "run", "--strategy", "setnx", "--agents", a.addr, "--instances", "2", "--payments", "600", "--out", dir)
	ss := readSummaries(t, dir)
	if len(ss) != 1 {
		t.Fatalf("summary.json has %d runs; want 1", len(ss))
	}
	if s := ss[0]; s.Processed != 600 || s.Unsafe || len(s.Errors) != 0 || s.Params.InstanceMode != string(loadgen.InstanceProcess) {
		t.Errorf("setnx on a TLS agent: processed %d, unsafe %v, errors %v, mode %q; want 600, safe, none, process",
			s.Processed, s.Unsafe, s.Errors, s.Params.InstanceMode)
	}
	if got := a.started(); got != 2 {
		t.Errorf("the agent started %d instances; want 2", got)
	}
}

// TestAgentLostMidRun: an agent killed mid-run makes its instances'
// deliveries fail as agent_lost, with a line saying so; the run ends.
func TestAgentLostMidRun(t *testing.T) {
	if testing.Short() {
		t.Skip("starts agents, a Redis node and instance processes; skipped with -short")
	}
	a := startAgentProc(t, "", freeAddr(t, "127.0.0.1"))
	b := startAgentProc(t, "", freeAddr(t, "127.0.0.1"))
	t.Setenv(agent.TokenEnv, agentsToken)
	go func() {
		for end := time.Now().Add(20 * time.Second); b.started() < 2 && time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		}
		time.Sleep(500 * time.Millisecond)
		b.kill()
	}()
	dir := t.TempDir()
	stderr := runCommand(t, "run", "--strategy", "setnx", "--agents", a.addr+","+b.addr, "--instances", "4",
		"--rate", "2000", "--payments", "8000", "--out", dir)
	ss := readSummaries(t, dir)
	if len(ss) != 1 || ss[0].Errors[loadgen.ErrClassAgentLost] == 0 {
		t.Fatalf("summary errors %v; want deliveries failed as %s", ss[0].Errors, loadgen.ErrClassAgentLost)
	}
	if want := "agent " + b.addr + " lost"; !strings.Contains(stderr, want) {
		t.Errorf("stderr has no %q line:\n%s", want, stderr)
	}
}

// TestAgentRefusesCoordinator: a coordinator with another token, or none,
// is refused with one line on both sides that never names a token.
func TestAgentRefusesCoordinator(t *testing.T) {
	a := startAgentProc(t, "", freeAddr(t, "127.0.0.1"))
	cases := []struct {
		name, token, want string
		code              int
	}{
		// Another token: the agent refuses it.
		{"bad token", "not-the-token", "bad token", 1},
		// No token: the coordinator does not even try.
		{"no token", "", agent.TokenEnv + " is not set", 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv(agent.TokenEnv, c.token)
			var out, errb bytes.Buffer
			err := Run(context.Background(), []string{"run", "--strategy", "nolock", "--agents", a.addr, "--payments", "10", "--out", t.TempDir()}, &out, &errb)
			code := ExitCode(err, &errb)
			msg := errb.String()
			if code != c.code || !strings.Contains(msg, c.want) || strings.Count(strings.TrimSpace(msg), "\n") != 0 {
				t.Errorf("got exit %d, stderr %q; want exit %d and one line saying %q", code, msg, c.code, c.want)
			}
			if c.token != "" && strings.Contains(msg, c.token) {
				t.Errorf("stderr %q names the token", msg)
			}
		})
	}
	if log := a.log.String(); !strings.Contains(log, "refused") || !strings.Contains(log, "bad token") || strings.Contains(log, "not-the-token") || strings.Contains(log, agentsToken) {
		t.Errorf("agent log: want a refusal line naming no token:\n%s", log)
	}
}

// TestAgentUsage: the agent's bad command lines are usage errors.
func TestAgentUsage(t *testing.T) {
	cases := []struct {
		name  string
		args  []string
		token string
		want  string
	}{
		// --listen is required.
		{"no listen", []string{"agent"}, agentsToken, "--listen"},
		// HOST:PORT.
		{"bad listen", []string{"agent", "--listen", "nowhere"}, agentsToken, "--listen"},
		// A certificate without its key.
		{"tls half", []string{"agent", "--listen", "127.0.0.1:0", "--tls-cert", "x.pem"}, agentsToken, "--tls-cert"},
		// No token in the environment.
		{"no token", []string{"agent", "--listen", "127.0.0.1:0"}, "", agent.TokenEnv},
		// In-process instances cannot run on agents.
		{"goroutine on agents", []string{"run", "--strategy", "setnx", "--agents", "127.0.0.2:7070", "--instance-mode", "goroutine"}, agentsToken, "--instance-mode"},
		{"plan goroutine on agents", []string{"plan", "--agents", "127.0.0.2:7070", "--instance-mode", "goroutine"}, agentsToken, "--instance-mode"},
		// Instances on agents are processes: the sequenced store transport
		// serves them too, but not with --instance-mode goroutine.
		{"sequenced goroutine on agents", []string{"run", "--strategy", "setnx", "--agents", "127.0.0.2:7070", "--instance-mode", "goroutine", "--store-transport", "sequenced"}, agentsToken, "--instance-mode"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv(agent.TokenEnv, c.token)
			var errb bytes.Buffer
			err := Run(context.Background(), c.args, &bytes.Buffer{}, &errb)
			if !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v; want a usage error naming %s", err, c.want)
			}
		})
	}
}
