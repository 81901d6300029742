package agent

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockbench/lockbench/internal/syncbuf"

	"github.com/lockbench/lockbench/loadgen"
	"github.com/lockbench/lockbench/loadgen/store"
	_ "github.com/lockbench/lockbench/strategies/nolock"
)

// envTestCoordinator makes the test binary a coordinator that opens a
// session with the agent it names, starts two instances and waits to be
// killed (TestCoordinatorDeathKillsInstances).
const envTestCoordinator = "LOCKBENCH_TEST_COORDINATOR"

func TestMain(m *testing.M) {
	loadgen.MaybeRunChild()
	if addr := os.Getenv(envTestCoordinator); addr != "" {
		os.Exit(runTestCoordinator(addr))
	}
	os.Exit(m.Run())
}

const testToken = "test-token-1234"

// startAgent serves an agent on a free loopback port until the test ends.
func startAgent(t *testing.T) (*Agent, string, *syncbuf.Buffer) {
	t.Helper()
	log := &syncbuf.Buffer{}
	a, err := New(Config{Token: testToken, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = a.Serve(ctx, ln) }()
	t.Cleanup(func() { cancel(); <-done })
	return a, ln.Addr().String(), log
}

// TestHandshake: the agent refuses a coordinator without the token, with
// another or speaking another protocol, saying why in one line on both
// sides and never naming the token.
func TestHandshake(t *testing.T) {
	_, addr, log := startAgent(t)
	cases := []struct {
		name     string
		protocol byte
		token    string
		want     string // in the refusal; "" for accepted
	}{
		// The right token and protocol.
		{"accepted", Protocol, testToken, ""},
		// No token at all.
		{"no token", Protocol, "", "no token"},
		// Another token.
		{"bad token", Protocol, "guess", "bad token"},
		// Another protocol, even with the right token.
		{"protocol mismatch", Protocol + 1, testToken, "protocol mismatch"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			conn, err := net.DialTimeout("tcp", addr, time.Second)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
			if err := writeHello(conn, hello{Protocol: c.protocol, Kind: kindControl, Token: c.token, Version: "test"}); err != nil {
				t.Fatal(err)
			}
			var rep helloReply
			err = readStatus(conn, &rep)
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("got %v; want accepted", err)
			case c.want == "" && rep.Session == 0:
				t.Errorf("got session 0; want one")
			case c.want != "" && (err == nil || !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), c.want)):
				t.Errorf("got %v; want a refusal saying %q", err, c.want)
			case c.want != "" && strings.ContainsAny(err.Error(), "\n\r"):
				t.Errorf("refusal %q spans lines; want one", err)
			}
		})
	}
	if strings.Contains(log.String(), testToken) {
		t.Errorf("agent log names the token:\n%s", log)
	}
	for _, want := range []string{"no token", "bad token", "protocol mismatch"} {
		if !strings.Contains(log.String(), "refused 127.0.0.1:") || !strings.Contains(log.String(), want) {
			t.Errorf("agent log has no refusal line saying %q:\n%s", want, log)
		}
	}
}

// TestDialRefused: Dial returns the agent's reason as an ErrRefused.
func TestDialRefused(t *testing.T) {
	_, addr, _ := startAgent(t)
	ctx := context.Background()
	_, err := Dial(ctx, addr, DialConfig{Token: "wrong"})
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "bad token") || strings.Contains(err.Error(), "wrong") {
		t.Fatalf("got %v; want a bad-token refusal that does not name the token", err)
	}
	c, err := Dial(ctx, addr, DialConfig{Token: testToken})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// One host, one clock: the offset is within the round trip.
	if off := c.ClockOffset(); off < -time.Millisecond || off > time.Millisecond {
		t.Errorf("got clock offset %s on one host; want within ±1ms", off)
	}
}

// serveStore serves a memory store on loopback TCP until the test ends.
func serveStore(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = store.Serve(ln, store.NewMemory()) }()
	t.Cleanup(func() { ln.Close() })
	return ln.Addr().String()
}

// instanceConf is an instance process's configuration: nolock, with
// the store at storeAddr.
func instanceConf(id int, storeAddr string) []byte {
	sc := loadgen.DefaultScenario()
	sc.Instances = 2
	b, err := json.Marshal(struct {
		loadgen.InstanceConfig
		StoreAddr string
	}{loadgen.InstanceConfig{ID: id, Strategy: "nolock", Scenario: sc}, storeAddr})
	if err != nil {
		panic(err)
	}
	return b
}

// pids are the agent's instance processes, all sessions.
func (a *Agent) pids() []int {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []int
	for _, s := range a.sessions {
		s.mu.Lock()
		for _, c := range s.procs {
			out = append(out, c.cmd.Process.Pid)
		}
		s.mu.Unlock()
	}
	return out
}

// state is a process's state letter from /proc (R, S, T…), "" once it is
// gone.
func state(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		return ""
	}
	return s[i+2 : i+3]
}

// waitFor polls cond for up to d.
func waitFor(d time.Duration, cond func() bool) bool {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}

// readReady reads up to the instance's first report (its "ready").
func readReady(t *testing.T, in *Instance) {
	t.Helper()
	br := bufio.NewReader(in.Stdout())
	_ = in.conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	if _, err := br.Peek(1); err != nil {
		t.Fatalf("no report from the instance: %v", err)
	}
	_ = in.conn.SetReadDeadline(time.Time{})
}

// TestSignalsAndSessionEnd: the agent stops and continues its own child
// on request, and kills every instance of a session that ends.
func TestSignalsAndSessionEnd(t *testing.T) {
	a, addr, _ := startAgent(t)
	storeAddr := serveStore(t)
	ctx := context.Background()
	c, err := Dial(ctx, addr, DialConfig{Token: testToken})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var insts []*Instance
	for id := range 2 {
		in, err := c.Spawn(ctx, instanceConf(id, storeAddr), 1)
		if err != nil {
			t.Fatal(err)
		}
		readReady(t, in)
		insts = append(insts, in)
	}
	pids := a.pids()
	if len(pids) != 2 {
		t.Fatalf("got %d instance processes on the agent; want 2", len(pids))
	}
	if err := insts[0].Pause(); err != nil {
		t.Fatal(err)
	}
	stopped := func() int {
		n := 0
		for _, p := range pids {
			if state(p) == "T" {
				n++
			}
		}
		return n
	}
	if !waitFor(2*time.Second, func() bool { return stopped() == 1 }) {
		t.Fatalf("got %d stopped processes after Pause; want 1", stopped())
	}
	if err := insts[0].Resume(); err != nil {
		t.Fatal(err)
	}
	if !waitFor(2*time.Second, func() bool { return stopped() == 0 }) {
		t.Fatalf("got %d stopped processes after Resume; want 0", stopped())
	}
	// Stopped again, then the session ends: both die all the same.
	if err := insts[1].Pause(); err != nil {
		t.Fatal(err)
	}
	c.Close()
	gone := func() bool {
		for _, p := range pids {
			if state(p) != "" {
				return false
			}
		}
		return true
	}
	if !waitFor(5*time.Second, gone) {
		t.Fatalf("instance processes %v still there after the session ended", pids)
	}
}

// runTestCoordinator is the coordinator process of
// TestCoordinatorDeathKillsInstances: a session, two instances, then it
// waits to be killed.
func runTestCoordinator(addr string) int {
	ctx := context.Background()
	storeAddr := os.Getenv("LOCKBENCH_TEST_STORE")
	c, err := Dial(ctx, addr, DialConfig{Token: testToken})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	for id := range 2 {
		if _, err := c.Spawn(ctx, instanceConf(id, storeAddr), 1); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	fmt.Println("spawned")
	time.Sleep(time.Minute)
	return 0
}

// TestCoordinatorDeathKillsInstances: a coordinator that dies (SIGKILL,
// no goodbye) leaves no instance running on the agent.
func TestCoordinatorDeathKillsInstances(t *testing.T) {
	a, addr, log := startAgent(t)
	storeAddr := serveStore(t)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envTestCoordinator+"="+addr, "LOCKBENCH_TEST_STORE="+storeAddr)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	if !waitFor(20*time.Second, func() bool { return len(a.pids()) == 2 }) {
		t.Fatalf("got %d instances on the agent; want 2 (coordinator said %q)", len(a.pids()), out.String())
	}
	pids := a.pids()
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	gone := func() bool {
		for _, p := range pids {
			if state(p) != "" {
				return false
			}
		}
		return len(a.pids()) == 0
	}
	if !waitFor(5*time.Second, gone) {
		t.Fatalf("instance processes %v still there after their coordinator died", pids)
	}
	// Its instances' own connections broke too: each relay may kill its
	// process before the session's end does, so the count may be less.
	if !waitFor(time.Second, func() bool { return strings.Contains(log.String(), "instance(s) killed") }) {
		t.Errorf("agent log has no line for the killed instances:\n%s", log)
	}
}

// TestSplitAddrs: a list of HOST:PORT, names resolved to every address.
func TestSplitAddrs(t *testing.T) {
	cases := []struct {
		in   string
		want string // joined by ","; "error" for an error
	}{
		// Addresses as given, blanks dropped, duplicates once.
		{"127.0.0.2:7070, 127.0.0.3:7070,,127.0.0.2:7070", "127.0.0.2:7070,127.0.0.3:7070"},
		// A name: every address it resolves to.
		{"localhost:7070", "127.0.0.1:7070"},
		// No port.
		{"127.0.0.2", "error"},
		// Nothing.
		{" , ", "error"},
	}
	for _, c := range cases {
		got, err := SplitAddrs(context.Background(), c.in)
		var addrs []string
		for _, t := range got {
			addrs = append(addrs, t.Addr)
		}
		g := strings.Join(addrs, ",")
		if err != nil {
			g = "error"
		}
		// localhost may also resolve to ::1.
		if c.in == "localhost:7070" && strings.HasPrefix(g, "127.0.0.1:7070") {
			g = "127.0.0.1:7070"
		}
		if g != c.want {
			t.Errorf("SplitAddrs(%q) = %q (%v); want %q", c.in, g, err, c.want)
		}
	}
}
