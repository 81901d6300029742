package servers

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lockbench/lockbench/internal/syncbuf"

	"github.com/go-zookeeper/zk"
	"github.com/redis/go-redis/v9"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// testTimeout bounds each test that starts servers.
const testTimeout = 60 * time.Second

func start(t *testing.T, needs Needs, opts Options) *Cluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	c, err := Start(ctx, needs, opts)
	if err != nil {
		t.Fatalf("Start(%+v): %v", needs, err)
	}
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Errorf("Stop: %v", err)
		}
	})
	return c
}

func redisClient(t *testing.T, addr string) *redis.Client {
	t.Helper()
	rc := redis.NewClient(&redis.Options{Addr: addr, DialTimeout: time.Second, MaxRetries: -1})
	t.Cleanup(func() { rc.Close() })
	return rc
}

func etcdClient(t *testing.T, endpoints []string) *clientv3.Client {
	t.Helper()
	ec, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatalf("etcd client: %v", err)
	}
	t.Cleanup(func() { ec.Close() })
	return ec
}

// zkClient connects to a ZooKeeper ensemble and waits for a session.
func zkClient(t *testing.T, servers []string) *zk.Conn {
	t.Helper()
	zc, _, err := zk.Connect(servers, 5*time.Second, zk.WithLogger(nopLogger{}), zk.WithLogInfo(false))
	if err != nil {
		t.Fatalf("zk client: %v", err)
	}
	t.Cleanup(zc.Close)
	deadline := time.Now().Add(10 * time.Second)
	for zc.State() != zk.StateHasSession {
		if time.Now().After(deadline) {
			t.Fatalf("zk client: no session after 10s (state %v)", zc.State())
		}
		time.Sleep(10 * time.Millisecond)
	}
	return zc
}

// nopLogger keeps the zk client quiet about the servers the tests kill.
type nopLogger struct{}

func (nopLogger) Printf(string, ...any) {}

// zkGet reads path, retrying while the client reconnects.
func zkGet(ctx context.Context, zc *zk.Conn, path string) (string, error) {
	for {
		data, _, err := zc.Get(path)
		if err == nil || ctx.Err() != nil {
			return string(data), err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// alive reports whether a process (or, for a negative pid, a process group)
// exists.
func alive(pid int) bool {
	return !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

// TestCluster starts what a full lockbench run uses and runs every fault
// method on it, then checks that Stop leaves nothing behind.
func TestCluster(t *testing.T) {
	t.Parallel()
	var log syncbuf.Buffer
	c := start(t, Needs{Redis: 5, Etcd: true, Postgres: true}, Options{Faketime: true, Log: &log})
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()

	ep := c.Endpoints()
	if len(ep.RedisAddrs) != 5 || len(ep.EtcdEndpoints) != 1 || ep.PostgresDSN == "" {
		t.Fatalf("Endpoints() = %+v; want 5 Redis, 1 etcd, a DSN", ep)
	}

	t.Run("answers", func(t *testing.T) {
		for _, r := range c.Redis {
			if err := redisClient(t, r.Addr).Ping(ctx).Err(); err != nil {
				t.Errorf("PING %s: %v", r.Addr, err)
			}
		}
		ec := etcdClient(t, ep.EtcdEndpoints)
		if _, err := ec.Put(ctx, "k", "v"); err != nil {
			t.Fatalf("etcd Put: %v", err)
		}
		resp, err := ec.Get(ctx, "k")
		if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "v" {
			t.Errorf("etcd Get = %v, %v; want v", resp, err)
		}
		if err := pingPostgres(ctx, ep.PostgresDSN); err != nil {
			t.Errorf("postgres SELECT 1: %v", err)
		}
		if !strings.Contains(log.String(), "redis-0| ") {
			t.Errorf("Options.Log got no line prefixed %q", "redis-0| ")
		}
	})

	t.Run("redis kill and start", func(t *testing.T) {
		r := c.Redis[0]
		rc := redisClient(t, r.Addr)
		if err := rc.Set(ctx, "k", "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
		oldPid := r.Pid()
		if err := r.Kill(); err != nil {
			t.Fatalf("Kill: %v", err)
		}
		if alive(oldPid) {
			t.Errorf("pid %d alive after Kill", oldPid)
		}
		if got := r.Pid(); got != 0 {
			t.Errorf("Pid() after Kill = %d; want 0", got)
		}
		begin := time.Now()
		if err := rc.Ping(ctx).Err(); err == nil {
			t.Errorf("PING after Kill succeeded")
		}
		if d := time.Since(begin); d > time.Second {
			t.Errorf("PING after Kill took %v; want it to fail fast", d)
		}
		if err := r.Kill(); err != nil {
			t.Errorf("second Kill: %v", err)
		}
		if err := r.Start(ctx); err != nil {
			t.Fatalf("Start: %v", err)
		}
		if err := rc.Ping(ctx).Err(); err != nil {
			t.Fatalf("PING after Start: %v", err)
		}
		if n, err := rc.DBSize(ctx).Result(); err != nil || n != 0 {
			t.Errorf("DBSIZE after restart = %d, %v; want 0 (no persistence)", n, err)
		}
		if r.Pid() == 0 || r.Pid() == oldPid {
			t.Errorf("Pid() after Start = %d; want a new pid (old %d)", r.Pid(), oldPid)
		}
	})

	t.Run("etcd kill and start", func(t *testing.T) {
		m := c.Etcd[0]
		ec := etcdClient(t, ep.EtcdEndpoints)
		if _, err := ec.Put(ctx, "kept", "yes"); err != nil {
			t.Fatal(err)
		}
		if err := m.Kill(); err != nil {
			t.Fatalf("Kill: %v", err)
		}
		if m.pid() != 0 {
			t.Errorf("member still has a pid after Kill")
		}
		if err := m.Start(ctx); err != nil {
			t.Fatalf("Start: %v", err)
		}
		gctx, gcancel := context.WithTimeout(ctx, 10*time.Second)
		defer gcancel()
		resp, err := ec.Get(gctx, "kept")
		if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "yes" {
			t.Errorf("Get after restart = %v, %v; want the value put before Kill", resp, err)
		}
	})

	t.Run("postgres kill and start", func(t *testing.T) {
		p := c.Postgres
		pid := p.pid()
		if err := p.Kill(); err != nil {
			t.Fatalf("Kill: %v", err)
		}
		if alive(-pid) {
			t.Errorf("process group %d alive after Kill", pid)
		}
		cctx, ccancel := context.WithTimeout(ctx, 2*time.Second)
		defer ccancel()
		if err := pingPostgres(cctx, p.DSN); err == nil {
			t.Errorf("SELECT 1 after Kill succeeded")
		}
		if err := p.Start(ctx); err != nil {
			t.Fatalf("Start: %v", err)
		}
		if err := pingPostgres(ctx, p.DSN); err != nil {
			t.Errorf("SELECT 1 after Start: %v", err)
		}
	})

	t.Run("clock jump", func(t *testing.T) {
		jumped, steady := redisClient(t, c.Redis[1].Addr), redisClient(t, c.Redis[2].Addr)
		for _, rc := range []*redis.Client{jumped, steady} {
			if err := rc.Set(ctx, "lock", "me", 20*time.Second).Err(); err != nil {
				t.Fatal(err)
			}
		}
		if err := c.Redis[1].SetClockOffset(30 * time.Second); err != nil {
			t.Fatalf("SetClockOffset: %v", err)
		}
		deadline := time.Now().Add(3 * time.Second)
		for jumped.Exists(ctx, "lock").Val() != 0 {
			if time.Now().After(deadline) {
				t.Fatalf("key with 20 s TTL still there 3 s after a +30 s clock jump")
			}
			time.Sleep(20 * time.Millisecond)
		}
		if n := steady.Exists(ctx, "lock").Val(); n != 1 {
			t.Errorf("key on the node without a clock jump: EXISTS = %d; want 1", n)
		}
		if err := c.Redis[1].SetClockOffset(0); err != nil {
			t.Errorf("SetClockOffset(0): %v", err)
		}
	})

	t.Run("stop", func(t *testing.T) {
		var pids []int
		for _, s := range c.servers() {
			if pid := s.pid(); pid != 0 {
				pids = append(pids, pid)
			} else {
				t.Errorf("%s not running before Stop", s.name)
			}
		}
		if err := c.Stop(); err != nil {
			t.Fatalf("Stop: %v", err)
		}
		for _, pid := range pids {
			if alive(pid) || alive(-pid) {
				t.Errorf("pid %d (or its group) alive after Stop", pid)
			}
		}
		if _, err := os.Stat(c.dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("temporary directory %s: stat error %v; want it removed", c.dir, err)
		}
		if err := c.Stop(); err != nil {
			t.Errorf("second Stop: %v", err)
		}
		if err := c.Redis[0].Start(ctx); !errors.Is(err, ErrStopped) {
			t.Errorf("Redis.Start after Stop = %v; want ErrStopped", err)
		}
		if err := c.Redis[1].SetClockOffset(time.Second); !errors.Is(err, ErrStopped) {
			t.Errorf("SetClockOffset after Stop = %v; want ErrStopped", err)
		}
		if err := c.Etcd[0].Kill(); err != nil {
			t.Errorf("Kill after Stop = %v; want nil", err)
		}
	})
}

// TestEtcdThreeMembers forms a 3-member cluster that keeps answering with a
// follower down.
func TestEtcdThreeMembers(t *testing.T) {
	t.Parallel()
	c := start(t, Needs{Etcd: true}, Options{EtcdMembers: 3})
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	ep := c.Endpoints()
	if len(ep.EtcdEndpoints) != 3 {
		t.Fatalf("EtcdEndpoints = %v; want 3", ep.EtcdEndpoints)
	}
	ec := etcdClient(t, ep.EtcdEndpoints)
	if _, err := ec.Put(ctx, "k", "v"); err != nil {
		t.Fatalf("Put: %v", err)
	}
	resp, err := ec.MemberList(ctx)
	if err != nil || len(resp.Members) != 3 {
		t.Fatalf("MemberList = %v, %v; want 3 members", resp, err)
	}
	var follower *EtcdMember
	for _, m := range c.Etcd {
		st, err := ec.Status(ctx, m.ClientURL)
		if err != nil {
			t.Fatalf("Status %s: %v", m.ClientURL, err)
		}
		if st.Header.MemberId != st.Leader {
			follower = m
		}
	}
	if follower == nil {
		t.Fatal("no follower found")
	}
	if err := follower.Kill(); err != nil {
		t.Fatal(err)
	}
	// The quorum is what is under test, not the client's balancer: a client
	// that had picked the killed member's connection fails a Put on it
	// (Unavailable, EOF) and does not retry it, a Put not being idempotent.
	// So the Put goes to the two members left.
	var left []string
	for _, m := range c.Etcd {
		if m != follower {
			left = append(left, m.ClientURL)
		}
	}
	if _, err := etcdClient(t, left).Put(ctx, "k", "v2"); err != nil {
		t.Errorf("Put with 2 of 3 members: %v", err)
	}
	if err := follower.Start(ctx); err != nil {
		t.Errorf("Start: %v", err)
	}
}

// TestZooKeeper starts one ZooKeeper server with lockbench's settings,
// kills it and starts it again (its znodes survive: it keeps a transaction
// log), and checks that Stop leaves nothing behind.
func TestZooKeeper(t *testing.T) {
	t.Parallel()
	began := time.Now()
	c := start(t, Needs{ZooKeeper: true}, Options{})
	t.Logf("ZooKeeper served %v after Start", time.Since(began).Round(time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	ep := c.Endpoints()
	if len(c.ZooKeeper) != 1 || len(ep.ZKServers) != 1 || ep.ZKServers[0] != c.ZooKeeper[0].Addr {
		t.Fatalf("ZKServers = %v with %d members; want the one member's address", ep.ZKServers, len(c.ZooKeeper))
	}
	m := c.ZooKeeper[0]
	conf, err := zkFourLetter(ctx, m.Addr, "conf")
	if err != nil {
		t.Fatalf("conf: %v", err)
	}
	// The timings the strategy relies on: ZooKeeper raises any session
	// timeout to 2 ticks and caps it at the maximum.
	for _, want := range []string{"tickTime=100\n", "minSessionTimeout=200\n", "maxSessionTimeout=600000\n", "maxClientCnxns=0\n"} {
		if !strings.Contains(conf, want) {
			t.Errorf("conf answered %q; want a line %q", conf, strings.TrimSpace(want))
		}
	}

	zc := zkClient(t, ep.ZKServers)
	if _, err := zc.Create("/kept", []byte("yes"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("Create: %v", err)
	}
	pid := m.pid()
	if err := m.Kill(); err != nil {
		t.Fatalf("Kill: %v", err)
	}
	if alive(-pid) {
		t.Errorf("process group %d alive after Kill", pid)
	}
	if err := zkServing(ctx, m.Addr); err == nil {
		t.Errorf("srvr after Kill answered")
	}
	if err := m.Kill(); err != nil {
		t.Errorf("second Kill: %v", err)
	}
	began = time.Now()
	if err := m.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Logf("restarted in %v", time.Since(began).Round(time.Millisecond))
	gctx, gcancel := context.WithTimeout(ctx, 10*time.Second)
	defer gcancel()
	if got, err := zkGet(gctx, zc, "/kept"); err != nil || got != "yes" {
		t.Errorf("Get after restart = %q, %v; want the znode created before Kill", got, err)
	}

	pid = m.pid()
	if err := c.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if pid == 0 || alive(pid) || alive(-pid) {
		t.Errorf("pid %d (or its group) alive after Stop, or never running", pid)
	}
	if err := m.Start(ctx); !errors.Is(err, ErrStopped) {
		t.Errorf("Start after Stop = %v; want ErrStopped", err)
	}
}

// TestZooKeeperThreeMembers forms a 3-member ensemble that keeps serving
// with a follower down and takes it back.
func TestZooKeeperThreeMembers(t *testing.T) {
	t.Parallel()
	began := time.Now()
	c := start(t, Needs{ZooKeeper: true}, Options{ZKMembers: 3})
	t.Logf("ensemble served %v after Start", time.Since(began).Round(time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	ep := c.Endpoints()
	if len(ep.ZKServers) != 3 {
		t.Fatalf("ZKServers = %v; want 3", ep.ZKServers)
	}
	var leaders int
	var follower *ZKMember
	for _, m := range c.ZooKeeper {
		out, err := zkFourLetter(ctx, m.Addr, "srvr")
		if err != nil {
			t.Fatalf("srvr %s: %v", m.Addr, err)
		}
		switch {
		case strings.Contains(out, "Mode: leader\n"):
			leaders++
		case strings.Contains(out, "Mode: follower\n"):
			follower = m
		}
	}
	if leaders != 1 || follower == nil {
		t.Fatalf("%d leaders, follower %v; want one leader and followers", leaders, follower)
	}
	zc := zkClient(t, ep.ZKServers)
	if err := follower.Kill(); err != nil {
		t.Fatal(err)
	}
	cctx, ccancel := context.WithTimeout(ctx, 10*time.Second)
	defer ccancel()
	for {
		_, err := zc.Create("/two-of-three", nil, 0, zk.WorldACL(zk.PermAll))
		if err == nil {
			break
		}
		if cctx.Err() != nil {
			t.Fatalf("Create with 2 of 3 members: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := follower.Start(ctx); err != nil {
		t.Errorf("Start: %v", err)
	}
}

// TestFaultsRaceStop runs Kill and Start against Stop; nothing may survive
// Stop and the fault methods must end with ErrStopped.
func TestFaultsRaceStop(t *testing.T) {
	t.Parallel()
	c := start(t, Needs{Redis: 1}, Options{})
	r := c.Redis[0]
	if err := r.SetClockOffset(time.Second); !errors.Is(err, ErrNoFaketime) {
		t.Errorf("SetClockOffset without Faketime = %v; want ErrNoFaketime", err)
	}
	var wg sync.WaitGroup
	pids := make(chan int, 1000)
	wg.Go(func() {
		for {
			pids <- r.Pid()
			if err := r.Kill(); err != nil {
				t.Errorf("Kill: %v", err)
			}
			if err := r.Start(context.Background()); err != nil {
				if !errors.Is(err, ErrStopped) {
					t.Errorf("Start: %v; want nil or ErrStopped", err)
				}
				return
			}
		}
	})
	time.Sleep(300 * time.Millisecond)
	if err := c.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	wg.Wait()
	close(pids)
	for pid := range pids {
		if pid != 0 && alive(pid) {
			t.Errorf("pid %d alive after Stop", pid)
		}
	}
}

// TestStartErrorHasLog checks that a server that dies at start is reported
// with its name and the end of its log.
func TestStartErrorHasLog(t *testing.T) {
	t.Parallel()
	c := &Cluster{}
	c.dir = t.TempDir()
	c.stopCtx, c.cancel = context.WithCancel(context.Background())
	defer c.cancel()
	s := &server{
		name:    "broken",
		logPath: c.dir + "/server.log",
		stopSig: syscall.SIGTERM,
		timeout: 5 * time.Second,
		build: func() (*exec.Cmd, error) {
			return exec.Command("/bin/sh", "-c", "echo first line; echo boom: Address already in use >&2; exit 3"), nil
		},
		ready: func(context.Context) error { return errors.New("not yet") },
		desc:  func() string { return "broken (127.0.0.1:1)" },
		cl:    &c.state,
	}
	err := s.start(context.Background())
	var se *StartError
	if !errors.As(err, &se) {
		t.Fatalf("start = %v; want a *StartError", err)
	}
	if se.Server != "broken (127.0.0.1:1)" || !strings.Contains(se.LogTail, "boom") || !strings.Contains(err.Error(), "exited") {
		t.Errorf("error = %q; want the server's name, that it exited, and its log", err)
	}
	if !addrInUse(err) {
		t.Errorf("addrInUse(%q) = false; want true", err)
	}
	if s.pid() != 0 {
		t.Errorf("pid() = %d after a failed start; want 0", s.pid())
	}
}

// TestEnsure checks that Ensure starts only what the given endpoints lack.
func TestEnsure(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	full := Endpoints{
		RedisAddrs:    []string{"127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3", "127.0.0.1:4", "127.0.0.1:5"},
		RedisPassword: "pw",
		EtcdEndpoints: []string{"http://127.0.0.1:6"},
		PostgresDSN:   "postgres://u:pw@127.0.0.1:7/db",
		ZKServers:     []string{"127.0.0.1:8"},
	}

	t.Run("everything given", func(t *testing.T) {
		ep, c, err := Ensure(ctx, Needs{Redis: 5, Etcd: true, Postgres: true, ZooKeeper: true}, full, Options{})
		if err != nil || c != nil {
			t.Fatalf("Ensure = %v, %v; want no cluster, no error", c, err)
		}
		if strings.Join(ep.Env(), "\n") != strings.Join(full.Env(), "\n") {
			t.Errorf("Ensure endpoints = %+v; want %+v", ep, full)
		}
		if err := c.Stop(); err != nil {
			t.Errorf("nil Cluster Stop = %v", err)
		}
	})

	t.Run("too few redis", func(t *testing.T) {
		few := Endpoints{RedisAddrs: full.RedisAddrs[:2]}
		_, c, err := Ensure(ctx, Needs{Redis: 5}, few, Options{})
		if !errors.Is(err, ErrTooFewNodes) || c != nil {
			t.Fatalf("Ensure = %v, %v; want ErrTooFewNodes and no cluster", c, err)
		}
		if msg := err.Error(); !strings.Contains(msg, EnvRedisAddrs) || !strings.Contains(msg, "5") {
			t.Errorf("error %q; want it to name %s and the 5 needed", msg, EnvRedisAddrs)
		}
	})

	t.Run("only the missing kind", func(t *testing.T) {
		given := Endpoints{RedisAddrs: full.RedisAddrs, RedisPassword: "pw"}
		ep, c, err := Ensure(ctx, Needs{Redis: 5, Etcd: true}, given, Options{})
		if err != nil {
			t.Fatalf("Ensure: %v", err)
		}
		defer c.Stop()
		if len(c.Redis) != 0 || len(c.Etcd) != 1 || c.Postgres != nil {
			t.Errorf("started %d Redis, %d etcd, postgres %v; want only 1 etcd", len(c.Redis), len(c.Etcd), c.Postgres != nil)
		}
		if strings.Join(ep.RedisAddrs, ",") != strings.Join(given.RedisAddrs, ",") || ep.RedisPassword != "pw" {
			t.Errorf("Redis endpoints = %v %q; want the given ones", ep.RedisAddrs, ep.RedisPassword)
		}
		if len(ep.EtcdEndpoints) != 1 || ep.EtcdEndpoints[0] != c.Etcd[0].ClientURL {
			t.Errorf("EtcdEndpoints = %v; want the started member's %s", ep.EtcdEndpoints, c.Etcd[0].ClientURL)
		}
	})
}

// TestEndpointsEnv checks that Env's lines read back through
// EndpointsFromEnv.
func TestEndpointsEnv(t *testing.T) {
	want := Endpoints{
		RedisAddrs:    []string{"127.0.0.1:6379", "127.0.0.1:6380"},
		RedisPassword: "s3cret",
		EtcdEndpoints: []string{"http://127.0.0.1:2379"},
		PostgresDSN:   "postgres://u:pw@127.0.0.1:5432/db?sslmode=disable",
		ZKServers:     []string{"127.0.0.1:2181", "127.0.0.1:2182"},
	}
	for _, line := range want.Env() {
		k, v, _ := strings.Cut(line, "=")
		t.Setenv(k, v)
	}
	t.Setenv(EnvRedisAddrs, " 127.0.0.1:6379 , ,127.0.0.1:6380,")
	got := EndpointsFromEnv()
	if strings.Join(got.Env(), "\n") != strings.Join(want.Env(), "\n") {
		t.Errorf("EndpointsFromEnv() = %+v; want %+v", got, want)
	}
	if lines := (Endpoints{}).Env(); len(lines) != 0 {
		t.Errorf("empty Endpoints.Env() = %q; want no lines", lines)
	}
}

func TestRedact(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		// URL forms.
		{"postgres url", "postgres://u:pw@h/db", "postgres://u:xxxxx@h/db"},
		{"postgresql url with port and query", "postgresql://bob:p%40ss@127.0.0.1:5432/x?sslmode=disable", "postgresql://bob:xxxxx@127.0.0.1:5432/x?sslmode=disable"},
		{"password in query", "postgres://u@h/db?sslmode=disable&password=pw&x=1", "postgres://u@h/db?sslmode=disable&password=xxxxx&x=1"},
		{"redis url without user", "redis://:pw@127.0.0.1:6379/0", "redis://:xxxxx@127.0.0.1:6379/0"},
		{"rediss url with user", "rediss://default:pw@h:6380", "rediss://default:xxxxx@h:6380"},
		{"nats url with a token", "nats://s3cr3t@127.0.0.1:4222", "nats://xxxxx@127.0.0.1:4222"},
		{"nats url with user and password", "nats://bench:pw@h:4222?partitions=8", "nats://bench:xxxxx@h:4222?partitions=8"},
		{"redis url with a user and no password keeps the user", "redis://bench@h:6379", "redis://bench@h:6379"},
		{"url inside a message", "connect postgres://u:pw@h/db: refused", "connect postgres://u:xxxxx@h/db: refused"},
		// key=value forms.
		{"keyword dsn", "host=h user=u password=pw dbname=db", "host=h user=u password=xxxxx dbname=db"},
		{"keyword first", "password=pw host=h", "password=xxxxx host=h"},
		{"blanks around =", "host=h password = pw dbname=db", "host=h password = xxxxx dbname=db"},
		{"quoted value", `host=h password='p w\'x' dbname=db`, "host=h password=xxxxx dbname=db"},
		{"upper case", "PASSWORD=pw", "PASSWORD=xxxxx"},
		{"env line", "LOCKBENCH_REDIS_PASSWORD=pw", "LOCKBENCH_REDIS_PASSWORD=xxxxx"},
		// Command lines.
		{"flag with blank", "lockbench run --redis-password pw --rate 10", "lockbench run --redis-password xxxxx --rate 10"},
		{"flag with =", "lockbench run -redis-password=pw", "lockbench run -redis-password=xxxxx"},
		{"dsn flag", "lockbench run --pg-dsn postgres://u:pw@h/db", "lockbench run --pg-dsn postgres://u:xxxxx@h/db"},
		// Nothing to hide.
		{"url without password", "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable", "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"},
		{"host:port list", "127.0.0.1:6379,127.0.0.1:6380", "127.0.0.1:6379,127.0.0.1:6380"},
		{"etcd url", "http://127.0.0.1:2379", "http://127.0.0.1:2379"},
		{"port then path with @", "http://h:2379/a@b", "http://h:2379/a@b"},
		{"word containing password", "passwordless login", "passwordless login"},
	} {
		if got := Redact(tc.in); got != tc.want {
			t.Errorf("%s: Redact(%q) = %q; want %q", tc.name, tc.in, got, tc.want)
		}
	}
}

func TestFaketimeOffset(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{30 * time.Second, "+30s"}, // the clock-jump fault
		{0, "+0s"},                 // back to real time
		{1500 * time.Millisecond, "+1.5s"},
		{-2 * time.Second, "-2s"}, // behind
	} {
		if got := faketimeOffset(tc.d); got != tc.want {
			t.Errorf("faketimeOffset(%v) = %q; want %q", tc.d, got, tc.want)
		}
	}
}

// TestMissingBinary checks the error when a binary is missing and may not be
// installed. Not parallel: it replaces canApt, which only a parallel test
// could be reading meanwhile.
func TestMissingBinary(t *testing.T) {
	saved := canApt
	canApt = func() bool { return false }
	defer func() { canApt = saved }()
	pkg := &aptPackage{name: "redis-server"}
	_, err := ensure(context.Background(), pkg, "redis-server", EnvRedisAddrs, func() string { return "" })
	if !errors.Is(err, ErrNotInstalled) {
		t.Fatalf("ensure = %v; want ErrNotInstalled", err)
	}
	for _, want := range []string{"redis-server not found", "apt-get install -y redis-server", EnvRedisAddrs} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q; want it to contain %q", err, want)
		}
	}
	if got, err := ensure(context.Background(), pkg, "x", "", func() string { return "/bin/x" }); got != "/bin/x" || err != nil {
		t.Errorf("ensure with the binary found = %q, %v; want /bin/x, nil", got, err)
	}
}
