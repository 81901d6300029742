package adapter_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockbench/lockbench/adapters"
	"github.com/lockbench/lockbench/strategies"
	"github.com/lockbench/lockbench/strategies/adapter"
	"github.com/lockbench/lockbench/strategies/adapter/adaptertest"
)

// needRuntime skips a test of a shipped adapter when its runtime is not
// installed at all (a missing library is a failure: CI installs them).
func needRuntime(t *testing.T, name string) {
	t.Helper()
	if strings.HasPrefix(name, "node-") {
		if _, err := exec.LookPath("node"); err != nil {
			t.Skipf("%s: node is not installed (apt-get install -y nodejs npm)", name)
		}
		return
	}
	if strings.HasPrefix(name, "java-") {
		if _, err := os.Stat(adapters.JavaPath); err != nil {
			t.Skipf("%s: %s is not installed (apt-get install -y %s)", name, adapters.JavaPath, adapters.JDKPackage)
		}
		return
	}
	if _, err := os.Stat(adapter.Python); err != nil {
		t.Skipf("%s: %s is not installed (apt-get install -y python3)", name, adapter.Python)
	}
}

// Each shipped adapter's registry entry is made of the hello it prints:
// `--hello` of the unpacked script says exactly the hello it was
// registered with.
func TestBuiltinHellos(t *testing.T) {
	for _, name := range adapter.Builtins() {
		t.Run(name, func(t *testing.T) {
			needRuntime(t, name)
			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
			defer cancel()
			cmd, err := adapter.BuiltinCommand(ctx, name)
			if err != nil {
				t.Fatalf("BuiltinCommand: %v", err)
			}
			got, err := adapter.ReadHello(ctx, cmd)
			if err != nil {
				t.Fatalf("ReadHello: %v", err)
			}
			var want adapter.Hello
			if err := json.Unmarshal([]byte(adapter.BuiltinHello(name)), &want); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("--hello: got %+v; want the registered %+v", got, want)
			}
			info := strategies.MustLookup(name)
			if info.Need != got.Need() || info.Fencing != got.Capabilities.Token || info.KeepAlive != (got.Lease != adapter.LeaseTTL) {
				t.Fatalf("registry entry %+v does not follow the hello %+v", info, got)
			}
		})
	}
}

// script writes an executable that runs the test adapter of mode, as a
// team's own adapter would be: a path, no environment of its own.
func script(t *testing.T, mode string) string {
	t.Helper()
	path, env := adaptertest.Command(mode)
	p := filepath.Join(t.TempDir(), mode+".sh")
	body := "#!/bin/sh\nexec env " + env[0] + " " + path + ` "$@"` + "\n"
	if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// exec:PATH resolves through PATH --hello: the row's name is exec: and the
// adapter's name, Lookup finds it again by what was typed (Ref), and it
// runs; a broken adapter's error is one line naming it, within 5s.
func TestExec(t *testing.T) {
	addr := redisAddr(t)
	good := "exec:" + script(t, adaptertest.Good)
	info, err := strategies.Resolve(good)
	if err != nil || info.Name != "exec:go-test-good" || info.LookupName() != good || !info.Fencing {
		t.Fatalf("Resolve(%s): got %+v, %v; want exec:go-test-good, fenced, found by %q", good, info, err, good)
	}
	s, err := info.Open(context.Background(), strategies.Config{RedisAddrs: []string{addr}})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer s.Close()
	l, err := s.Acquire(timeout(time.Second), "exec-"+time.Now().Format("150405.000000"))
	if err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	_ = l.Release(timeout(time.Second))

	for mode, want := range map[string]string{adaptertest.Exit: "exit status 3", adaptertest.Garbage: "not a hello", adaptertest.NoHello: "printed nothing within 5s"} {
		t.Run(mode, func(t *testing.T) {
			t0 := time.Now()
			name := "exec:" + script(t, mode)
			_, err := strategies.Resolve(name)
			if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "adapter ") || strings.Contains(err.Error(), "\n") {
				t.Fatalf("Resolve(%s): got %v; want one line naming the adapter and %q", name, err, want)
			}
			if d := time.Since(t0); d > 6*time.Second {
				t.Fatalf("Resolve took %v; want within 5s", d)
			}
			if _, ok := strategies.Lookup(name); ok {
				t.Fatal("Lookup: found; want not found")
			}
		})
	}
	if _, err := strategies.Resolve("exec:"); err == nil || errors.Is(err, strategies.ErrAdapterLost) {
		t.Fatalf("Resolve(exec:): got %v; want a usage error", err)
	}
}

// The Python adapters' protocol loop answers a blocking acquire its library
// has not answered half a second past the acquire's timeout (kazoo blocks so
// while ZooKeeper is down), and the adapter goes on serving: here with a
// library that never returns for keys named hang-….
func TestPythonOverdueAcquire(t *testing.T) {
	needRuntime(t, "py-")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	dir, err := adapters.Dir(ctx, adapters.Python)
	if err != nil {
		t.Fatalf("adapters.Dir: %v", err)
	}
	p := filepath.Join(t.TempDir(), "hang.py")
	body := `#!` + adapter.Python + `
import sys, threading
sys.path.insert(0, ` + strconv.Quote(dir) + `)
import lockbench_protocol as proto

class Hang:
    def __init__(self):
        self.n = 0
    def acquire(self, req, ctx):
        if req["key"].startswith("hang-"):
            threading.Event().wait(60)
        self.n += 1
        return {"handle": self.n, "token": self.n}
    def release(self, handle):
        pass
    def classify(self, exc):
        return "error"

proto.run({"hello": "lockbench-adapter", "protocol": 1, "name": "py-hang", "library": "none",
           "library_version": "0", "backend": "none", "nodes": 0, "lease": "session",
           "capabilities": {"token": True, "extend": False, "blocking": True}}, Hang)
`
	if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	info, err := strategies.Resolve("exec:" + p)
	if err != nil {
		t.Fatalf("Resolve: %v", err)
	}
	s, err := info.Open(ctx, strategies.Config{AcquireTimeout: time.Second, TTL: 10 * time.Second})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer s.Close()
	t0 := time.Now()
	l, err := s.Acquire(ctx, "hang-1")
	took := time.Since(t0)
	if l != nil || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Acquire(hang-1): got %v, %v after %v; want a timeout (wrapping context.DeadlineExceeded)", l, err, took)
	}
	// The loop answers 0.5s past the 1s timeout; the adapter would be lost
	// only AnswerGrace (5s) past it.
	if took < time.Second || took > 3*time.Second {
		t.Fatalf("Acquire(hang-1) answered after %v; want between 1s and 3s", took)
	}
	l, err = s.Acquire(ctx, "ok-1")
	if err != nil {
		t.Fatalf("Acquire(ok-1) after the overdue one: %v; want a lease from the adapter still serving", err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatalf("Release: %v", err)
	}
}
