package servers

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
)

// EnvEtcdBin names a lockbench binary to run etcd members with, for
// programs that do not link package etcdchild (test binaries).
const EnvEtcdBin = "LOCKBENCH_ETCD_BIN"

// etcdMainPackage is the package built when no launcher is at hand.
const etcdMainPackage = "github.com/lockbench/lockbench/cmd/lockbench"

var (
	etcdLinked atomic.Bool

	buildOnce sync.Once
	buildPath string
	buildErr  error
)

// MarkEtcdLinked records that this binary links package etcdchild and so
// can run etcd members itself. etcdchild's init calls it.
func MarkEtcdLinked() { etcdLinked.Store(true) }

// etcdLauncher returns the program that runs an etcd member: this binary
// when it links etcdchild, else $LOCKBENCH_ETCD_BIN, else a lockbench binary
// built once per process with `go build` (test binaries run inside the
// module; the Go build cache makes this a link step).
func etcdLauncher(ctx context.Context) (string, error) {
	if etcdLinked.Load() {
		self, err := os.Executable()
		if err != nil {
			return "", fmt.Errorf("servers: find this executable to run etcd: %w", err)
		}
		return self, nil
	}
	if p := os.Getenv(EnvEtcdBin); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("servers: %s=%s: %w", EnvEtcdBin, p, err)
		}
		return p, nil
	}
	buildOnce.Do(func() {
		goBin, err := exec.LookPath("go")
		if err != nil {
			buildErr = fmt.Errorf("%w: no etcd launcher: set %s to a lockbench binary (make build), or put go on PATH", ErrNotInstalled, EnvEtcdBin)
			return
		}
		dir := filepath.Join(os.TempDir(), fmt.Sprintf("lockbench-etcd-launcher-%d", os.Getuid()))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			buildErr = fmt.Errorf("servers: %w", err)
			return
		}
		// Build to a private name, then rename: concurrent test processes
		// each get a complete binary, and running ones keep theirs.
		tmp, err := os.CreateTemp(dir, "build-*")
		if err != nil {
			buildErr = fmt.Errorf("servers: %w", err)
			return
		}
		tmp.Close()
		out, err := exec.CommandContext(ctx, goBin, "build", "-o", tmp.Name(), etcdMainPackage).CombinedOutput()
		if err != nil {
			os.Remove(tmp.Name())
			buildErr = fmt.Errorf("servers: building an etcd launcher (go build %s): %v: %s", etcdMainPackage, err, lastLines(string(out), 5))
			return
		}
		buildPath = filepath.Join(dir, "lockbench")
		if err := os.Rename(tmp.Name(), buildPath); err != nil {
			buildErr = fmt.Errorf("servers: %w", err)
		}
	})
	return buildPath, buildErr
}
