package adapter_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockbench/lockbench/loadgen"
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
	s, err := adapter.New(ctx, cmd, strategies.Config{RedisAddrs: strings.Split(os.Getenv("LOCKBENCH_REDIS_ADDRS"), ","), TTL: ttl, Owner: "holder"})
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	actx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := s.Acquire(actx, "pause-test"); err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Println("held")
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n') // until the test ends
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
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), envHolder+"="+name, "LOCKBENCH_TEST_TTL="+ttl.String(), "LOCKBENCH_REDIS_ADDRS="+addr)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = loadgen.SignalGroup(cmd.Process.Pid, syscall.SIGCONT)
		_ = stdin.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}()
	line := make(chan string, 1)
	go func() {
		l, _ := bufio.NewReader(stdout).ReadString('\n')
		line <- strings.TrimSpace(l)
	}()
	select {
	case l := <-line:
		if l != "held" {
			t.Fatalf("holder: %s", l)
		}
	case <-time.After(2 * time.Minute): // a first npm ci may run
		t.Fatal("holder took no lock within 2 minutes")
	}
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
