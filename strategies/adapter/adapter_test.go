package adapter_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/lockbench/lockbench/servers/adapterenv" // adapters reach the servers

	"github.com/lockbench/lockbench/internal/syncbuf"
	"github.com/lockbench/lockbench/servers/serverstest"
	"github.com/lockbench/lockbench/strategies"
	"github.com/lockbench/lockbench/strategies/adapter"
	"github.com/lockbench/lockbench/strategies/adapter/adaptertest"
)

func TestMain(m *testing.M) {
	adaptertest.Main() // returns unless re-executed as an adapter
	holderMain()       // the same for a holder (TestPauseStopsAdapter)
	javaMissingMain()  // and for TestJavaMissing's processes
	os.Exit(m.Run())
}

// redisAddr starts one Redis node for the test.
func redisAddr(t *testing.T) string { return serverstest.Redis(t) }

func command(mode string) adapter.Command {
	path, env := adaptertest.Command(mode)
	return adapter.Command{Path: path, Env: env}
}

func open(t *testing.T, mode string, cfg strategies.Config) *adapter.Strategy {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := adapter.New(ctx, command(mode), cfg)
	if err != nil {
		t.Fatalf("New(%s): got %v; want a strategy", mode, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func timeout(d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	_ = cancel // ends with the deadline
	return ctx
}

// The protocol with a working adapter: the hello, a grant with a token and
// a deadline, exclusion, release, ErrNotOwner on a second release,
// extend, and concurrent requests multiplexed over one pipe.
func TestProtocol(t *testing.T) {
	addr := redisAddr(t)
	ctx := context.Background()
	ttl := 2 * time.Second
	s := open(t, adaptertest.Good, strategies.Config{RedisAddrs: []string{addr}, TTL: ttl})
	if h := s.Hello(); h.Name != "go-test-good" || !h.Capabilities.Token || h.Need() != (strategies.Need{Backend: strategies.BackendRedis, Nodes: 1}) {
		t.Fatalf("hello %+v; want go-test-good, tokens, redis ×1", h)
	}
	if strategies.Blocks(s) {
		t.Fatal("Blocks: got true; want false (the hello says blocking false)")
	}
	key := "protocol-" + time.Now().Format("150405.000000")
	t0 := time.Now()
	l, err := s.Acquire(timeout(time.Second), key)
	if err != nil {
		t.Fatalf("Acquire: got %v; want a lease", err)
	}
	if l.Key() != key || l.Token() <= 0 {
		t.Fatalf("lease key %q token %d; want %q and a token > 0", l.Key(), l.Token(), key)
	}
	if dl := l.Deadline(); dl.Before(t0.Add(ttl-100*time.Millisecond)) || dl.After(time.Now().Add(ttl)) {
		t.Fatalf("Deadline %v after acquire; want about the TTL %v", dl.Sub(t0), ttl)
	}
	if _, err := s.Acquire(timeout(time.Second), key); !errors.Is(err, strategies.ErrNotAcquired) {
		t.Fatalf("second Acquire: got %v; want ErrNotAcquired", err)
	}
	ext, ok := l.(strategies.Extender)
	if !ok {
		t.Fatal("lease: not an Extender; want one (the hello says extend)")
	}
	before := l.Deadline()
	time.Sleep(50 * time.Millisecond)
	if err := ext.Extend(timeout(time.Second), ttl); err != nil || !l.Deadline().After(before) {
		t.Fatalf("Extend: got %v, deadline %v → %v; want nil and a later deadline", err, before, l.Deadline())
	}
	if err := l.Release(timeout(time.Second)); err != nil {
		t.Fatalf("Release: got %v; want nil", err)
	}
	if err := l.Release(timeout(time.Second)); !errors.Is(err, strategies.ErrNotOwner) {
		t.Fatalf("second Release: got %v; want ErrNotOwner", err)
	}
	l2, err := s.Acquire(timeout(time.Second), key)
	if err != nil || l2.Token() <= l.Token() {
		t.Fatalf("Acquire after release: got %v, token %d; want a lease with a token above %d", err, l2.Token(), l.Token())
	}
	_ = l2.Release(ctx)

	// 16 concurrent cycles on distinct keys: each answer reaches its caller.
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k := key + "-" + string(rune('a'+i))
			l, err := s.Acquire(timeout(2*time.Second), k)
			if err == nil && l.Key() != k {
				err = errors.New("lease of " + l.Key() + " for " + k)
			}
			if err == nil {
				err = l.Release(timeout(2 * time.Second))
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("concurrent cycle: got %v; want nil", err)
		}
	}
}

// A blocking adapter gets one acquire with the time left as its timeout,
// waits in it (Waited), and is sent cancel when the caller's context ends
// first: Acquire returns at once, and the lock is not left behind.
func TestBlocking(t *testing.T) {
	addr := redisAddr(t)
	s := open(t, adaptertest.Blocking, strategies.Config{RedisAddrs: []string{addr}, TTL: 2 * time.Second})
	if !strategies.Blocks(s) {
		t.Fatal("Blocks: got false; want true (the hello says blocking)")
	}
	key := "blocking-" + time.Now().Format("150405.000000")
	a, err := s.Acquire(timeout(time.Second), key)
	if err != nil {
		t.Fatalf("Acquire: got %v; want a lease", err)
	}
	// Cancelled while waiting: returns promptly.
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	t0 := time.Now()
	if _, err := s.Acquire(ctx, key); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Acquire: got %v; want context.Canceled", err)
	}
	if d := time.Since(t0); d > time.Second {
		t.Fatalf("cancelled Acquire returned after %v; want about 200ms", d)
	}
	// A waiter granted the lock once A releases it: Waited.
	time.AfterFunc(300*time.Millisecond, func() { _ = a.Release(context.Background()) })
	b, err := s.Acquire(timeout(3*time.Second), key)
	if err != nil || !strategies.Waited(b) {
		t.Fatalf("waiting Acquire: got %v, waited %v; want a lease that waited", err, err == nil && strategies.Waited(b))
	}
	_ = b.Release(context.Background())
}

// A lost event makes the lease's Release return ErrNotOwner (lost_lock).
func TestLostEvent(t *testing.T) {
	addr := redisAddr(t)
	s := open(t, adaptertest.Losing, strategies.Config{RedisAddrs: []string{addr}})
	l, err := s.Acquire(timeout(time.Second), "lost-"+time.Now().Format("150405.000000"))
	if err != nil {
		t.Fatalf("Acquire: got %v; want a lease", err)
	}
	time.Sleep(100 * time.Millisecond) // the event follows the answer
	if err := l.Release(timeout(time.Second)); !errors.Is(err, strategies.ErrNotOwner) {
		t.Fatalf("Release of a lock reported lost: got %v; want ErrNotOwner", err)
	}
}

// The adapter's stderr goes to adapters/<owner>.log in the run directory,
// redacted; each start (a command of many runs makes one per run) after
// a line naming it.
func TestLog(t *testing.T) {
	addr := redisAddr(t)
	dir := t.TempDir()
	for range 2 {
		s := open(t, adaptertest.Good, strategies.Config{RedisAddrs: []string{addr}, RunDir: dir, Owner: "instance-3"})
		_ = s.Close()
	}
	b, err := os.ReadFile(filepath.Join(dir, "adapters", "instance-3.log"))
	if err != nil {
		t.Fatalf("adapter log: %v", err)
	}
	log := string(b)
	if !strings.Contains(log, "adaptertest: started") || strings.Contains(log, "s3cret") {
		t.Fatalf("adapter log %q; want its stderr with the password redacted", log)
	}
	if n := strings.Count(log, "\n=== ") + strings.Count(log[:min(4, len(log))], "==="); n != 2 || strings.Count(log, "adaptertest: started") != 2 {
		t.Errorf("adapter log %q; want two starts, each after a === line", log)
	}
}

// Broken adapters: each fails within 5s (of its hello being due, or of a
// request's deadline) with one line naming the adapter and what went
// wrong, wrapping ErrAdapterLost; nothing hangs, and later calls fail at
// once.
func TestBroken(t *testing.T) {
	addr := redisAddr(t)
	cfg := strategies.Config{RedisAddrs: []string{addr}}
	for _, tc := range []struct {
		mode string
		want string // in the error
	}{
		// Exits at once: its exit status, and why, from its standard error.
		{adaptertest.Exit, "exit status 3"},
		{adaptertest.Exit, "adaptertest: starting | adaptertest: cannot go on: password=xxxxx refused"},
		// Prints garbage after its hello: the line, redacted.
		{adaptertest.Garbage, "not a protocol line"},
		// Never says hello: within HelloTimeout.
		{adaptertest.NoHello, "no hello within 5s"},
		// Says hello and never answers: New's probe gets no answer
		// within ProbeTimeout (counted as unavailable: a hung adapter
		// and a down server look alike that soon).
		{adaptertest.Silent, "no answer to a probe acquire within 3s"},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			t0 := time.Now()
			s, err := adapter.New(context.Background(), command(tc.mode), cfg)
			if err == nil {
				// The garbage follows the hello: the first call finds it.
				_, err = s.Acquire(timeout(time.Second), "broken")
				defer s.Close()
			}
			checkBroken(t, err, t0, tc.want)
		})
	}
	// Stops answering after New: lost 5s after a request's deadline; the
	// call itself returns at its deadline, and every later one fails with
	// ErrAdapterLost.
	t.Run(adaptertest.Stall, func(t *testing.T) {
		s := open(t, adaptertest.Stall, cfg)
		t0 := time.Now()
		if _, err := s.Acquire(timeout(200*time.Millisecond), "silent"); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Acquire: got %v; want its deadline exceeded", err)
		}
		if d := time.Since(t0); d > time.Second {
			t.Fatalf("Acquire returned after %v; want at its deadline, 200ms", d)
		}
		var err error
		for time.Since(t0) < 7*time.Second {
			if _, err = s.Acquire(timeout(100*time.Millisecond), "silent"); errors.Is(err, strategies.ErrAdapterLost) {
				break
			}
		}
		checkBroken(t, err, t0, "did not answer acquire within 5s after its deadline")
	})
}

func checkBroken(t *testing.T, err error, t0 time.Time, want string) {
	t.Helper()
	if d := time.Since(t0); d > 6*time.Second {
		t.Errorf("failed after %v; want within 5s of the deadline", d)
	}
	if !errors.Is(err, strategies.ErrAdapterLost) && !(want == "no answer to a probe acquire within 3s" && errors.Is(err, strategies.ErrUnavailable)) {
		t.Fatalf("got %v; want ErrAdapterLost", err)
	}
	msg := err.Error()
	if !strings.Contains(msg, "adapter ") || !strings.Contains(msg, want) || strings.ContainsAny(msg, "\n") || strings.Contains(msg, "hunter2") {
		t.Fatalf("error %q; want one line naming the adapter and %q, no secret", msg, want)
	}
}

// ReadHello: `PATH --hello` of a good adapter, and one line for broken ones.
func TestReadHello(t *testing.T) {
	h, err := adapter.ReadHello(context.Background(), command(adaptertest.Blocking))
	if err != nil || h.Name != "go-test-blocking" || !h.Capabilities.Blocking {
		t.Fatalf("ReadHello: got %+v, %v; want go-test-blocking, blocking", h, err)
	}
	for mode, want := range map[string]string{adaptertest.Exit: "--hello failed (exit status 3); its standard error ends: adaptertest: cannot go on", adaptertest.Garbage: "not a hello"} {
		_, err := adapter.ReadHello(context.Background(), command(mode))
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "--hello") {
			t.Errorf("ReadHello(%s): got %v; want one line with %q", mode, err, want)
		}
	}
}

// An adapter that fails before its hello is one error, New's, and no
// line of its own on LostLog; one lost after its hello is one line there.
func TestLostLogOnlyAfterHello(t *testing.T) {
	addr := redisAddr(t)
	cfg := strategies.Config{RedisAddrs: []string{addr}}
	var buf syncbuf.Buffer
	adapter.LostLog = &buf
	defer func() { adapter.LostLog = os.Stderr }()
	if _, err := adapter.New(context.Background(), command(adaptertest.Exit), cfg); err == nil {
		t.Fatal("New of an adapter that exits: no error")
	}
	if got := buf.String(); got != "" {
		t.Errorf("LostLog before a hello: %q; want nothing (New's error says it)", got)
	}
	s, err := adapter.New(context.Background(), command(adaptertest.Garbage), cfg)
	if err == nil {
		_, err = s.Acquire(timeout(time.Second), "broken")
		s.Close()
	}
	if err == nil || strings.Count(buf.String(), "\n") != 1 {
		t.Errorf("an adapter lost after its hello: error %v, LostLog %q; want one line", err, buf.String())
	}
}
