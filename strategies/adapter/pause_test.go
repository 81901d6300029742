package adapter_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockbench/lockbench/loadgen"
	"github.com/lockbench/lockbench/servers"
	"github.com/lockbench/lockbench/strategies"
	"github.com/lockbench/lockbench/strategies/adapter"
)

// envHolder makes the test binary a holder: an instance-like process that
// takes a lock of the named shipped adapter and holds it.
const envHolder = "LOCKBENCH_TEST_HOLDER"

// holderMain runs the holder, when the test binary was started as one.
func holderMain() {
	name := os.Getenv(envHolder)
	if name == "" {
		return
	}
	ctx := context.Background()
	cmd, err := adapter.BuiltinCommand(ctx, name)
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	ttl, _ := time.ParseDuration(os.Getenv("LOCKBENCH_TEST_TTL"))
	cfg := strategies.Config{TTL: ttl, Owner: "holder"}
	if v := os.Getenv("LOCKBENCH_REDIS_ADDRS"); v != "" {
		cfg.RedisAddrs = strings.Split(v, ",")
	}
	if v := os.Getenv("LOCKBENCH_ZK_SERVERS"); v != "" {
		cfg.ZKServers = strings.Split(v, ",")
	}
	s, err := adapter.New(ctx, cmd, cfg)
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	actx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	l, err := s.Acquire(actx, "pause-test")
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Println("held")
	// A line on stdin: release, and say how it went; EOF: the test ends.
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err == nil {
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		fmt.Println("release:", l.Release(rctx))
	}
	os.Exit(0)
}

// calls is how many commands Redis has run, less INFO (the test's own).
func calls(t *testing.T, c *redis.Client) int64 {
	t.Helper()
	info, err := c.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatalf("INFO commandstats: %v", err)
	}
	var n int64
	for line := range strings.SplitSeq(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":calls=")
		if !ok || name == "cmdstat_info" {
			continue
		}
		v, _ := strconv.ParseInt(strings.SplitN(rest, ",", 2)[0], 10, 64)
		n += v
	}
	return n
}

// Pausing an instance process stops its adapter too: the holder runs in a
// process group of its own, as loadgen.ChildCommand starts instance
// processes, and node-redis-semaphore's adapter (whose library refreshes
// the lock on a timer) is its child. Through Redis's INFO commandstats:
// the refreshes go on while the holder alone is stopped (the control), no
// command reaches Redis while its group is stopped (loadgen.SignalGroup,
// what the pause fault sends), and they resume after SIGCONT.
func TestPauseStopsAdapter(t *testing.T) {
	const name = "node-redis-semaphore"
	needRuntime(t, name)
	addr := redisAddr(t)
	const ttl = time.Second // refreshed every 0.8 × TTL
	cmd, _, _ := startHolder(t, name, ttl, "LOCKBENCH_REDIS_ADDRS="+addr)
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	window := 2 * ttl // two refreshes and more

	// Control: the holder alone stopped, its adapter still refreshes.
	if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	before := calls(t, c)
	time.Sleep(window)
	during := calls(t, c)
	_ = cmd.Process.Signal(syscall.SIGCONT)
	if during == before {
		t.Fatalf("control: no command in %v with the holder alone stopped; want the adapter's refreshes (is the test measuring anything?)", window)
	}

	// The group stopped: nothing reaches Redis.
	if err := loadgen.SignalGroup(cmd.Process.Pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // a command on the wire lands
	before = calls(t, c)
	time.Sleep(window)
	during = calls(t, c)
	if err := loadgen.SignalGroup(cmd.Process.Pid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	if during != before {
		t.Fatalf("%d commands reached Redis in %v with the holder's group stopped; want 0", during-before, window)
	}
	time.Sleep(window)
	if after := calls(t, c); after == during {
		t.Fatalf("no command in %v after SIGCONT; want the adapter running again", window)
	}
}

// startHolder starts the test binary as a holder (holderMain) of the named
// shipped adapter's lock, in a process group of its own as an instance
// process is, and waits until it holds the lock. The holder releases it
// when a line is written to its stdin, and prints "release: <error>";
// lines delivers what it prints. The group is continued and killed when
// the test ends.
func startHolder(t *testing.T, name string, ttl time.Duration, env ...string) (*exec.Cmd, io.Writer, <-chan string) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(append(os.Environ(), envHolder+"="+name, "LOCKBENCH_TEST_TTL="+ttl.String()), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = loadgen.SignalGroup(cmd.Process.Pid, syscall.SIGCONT)
		_ = stdin.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	lines := make(chan string, 4)
	go func() {
		r := bufio.NewReader(stdout)
		for {
			l, err := r.ReadString('\n')
			if err != nil {
				close(lines)
				return
			}
			lines <- strings.TrimSpace(l)
		}
	}()
	select {
	case l := <-lines:
		if l != "held" {
			t.Fatalf("holder: %s", l)
		}
	case <-time.After(2 * time.Minute): // a first npm ci may run
		t.Fatal("holder took no lock within 2 minutes")
	}
	return cmd, stdin, lines
}

// py-kazoo's lease is its ZooKeeper session: a holder whose instance is
// stopped for longer than the session timeout loses the lock (another
// client takes it while the holder is stopped), and once continued, the
// holder learns it (the adapter's lost event): its release says it no
// longer owns the lock.
func TestPauseExpiresKazooSession(t *testing.T) { testPauseExpiresSession(t, "py-kazoo") }

// The same for java-curator, whose lease is Curator's ZooKeeper session.
func TestPauseExpiresCuratorSession(t *testing.T) { testPauseExpiresSession(t, "java-curator") }

func testPauseExpiresSession(t *testing.T, name string) {
	needRuntime(t, name)
	if testing.Short() {
		t.Skip("starts ZooKeeper; run without -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := servers.Start(ctx, servers.Needs{ZooKeeper: true}, servers.Options{})
	if err != nil {
		t.Fatalf("start ZooKeeper: %v", err)
	}
	t.Cleanup(func() { _ = cl.Stop() })
	zk := cl.ZooKeeper[0].Addr
	const ttl = time.Second // the session timeout
	cmd, stdin, lines := startHolder(t, name, ttl, "LOCKBENCH_ZK_SERVERS="+zk)

	other, err := strategies.New(ctx, name, strategies.Config{ZKServers: []string{zk}, TTL: ttl, Owner: "other", AcquireTimeout: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	// Control: while the holder runs, its lock excludes the other client.
	if l, err := other.Acquire(timeout(1500*time.Millisecond), "pause-test"); err == nil {
		_ = l.Release(context.Background())
		t.Fatal("the other client got the lock while the holder held it; want it excluded (is the test measuring anything?)")
	}

	if err := loadgen.SignalGroup(cmd.Process.Pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	l, err := other.Acquire(timeout(10*time.Second), "pause-test")
	if err != nil {
		t.Fatalf("with the holder stopped: %v; want the lock once its session expired", err)
	}
	t.Logf("the other client got the lock %v after the holder stopped", time.Since(stopped).Round(time.Millisecond))
	if err := loadgen.SignalGroup(cmd.Process.Pid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * ttl) // the adapter reconnects and sees its session expired
	if _, err := io.WriteString(stdin, "release\n"); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-lines:
		if !strings.Contains(got, strategies.ErrNotOwner.Error()) {
			t.Errorf("holder's release after the pause: %q; want ErrNotOwner (the session, and the lock with it, expired)", got)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the holder did not answer its release within 15s")
	}
	_ = l.Release(context.Background())
}
