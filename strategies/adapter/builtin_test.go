package adapter_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

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
