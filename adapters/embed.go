package adapters

import (
	"bytes"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

//go:embed node/*.js node/package.json node/package-lock.json python/*.py
var files embed.FS

// NpmTimeout bounds `npm ci` on first use: 3 minutes.
const NpmTimeout = 3 * time.Minute

// Runtimes of the shipped adapters: the folder each one's scripts are in.
const (
	Node   = "node"
	Python = "python"
)

// complete marks a runtime's folder as fully unpacked (and installed).
const complete = ".complete"

var (
	mu    sync.Mutex
	ready = map[string]string{} // runtime → its unpacked folder
)

// Dir returns the folder of runtime's adapters (Node or Python), unpacking
// them first if this version has not been yet, and for Node running
// `npm ci --omit=dev --no-audit --no-fund` there (bounded by NpmTimeout
// and ctx). Several processes may do so at once: each works in a folder
// of its own and renames it into place; the first rename wins. Its error
// is one line.
func Dir(ctx context.Context, runtime string) (string, error) {
	mu.Lock()
	defer mu.Unlock()
	if dir, ok := ready[runtime]; ok {
		return dir, nil
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("adapters: no cache directory to unpack the %s adapters to: %v", runtime, err)
	}
	dir := filepath.Join(cache, "lockbench", "adapters", version(), runtime)
	if _, err := os.Stat(filepath.Join(dir, complete)); err == nil {
		ready[runtime] = dir
		return dir, nil
	}
	if err := unpack(ctx, runtime, dir); err != nil {
		return "", err
	}
	ready[runtime] = dir
	return dir, nil
}

// version is the hash of the embedded scripts: a new version unpacks to a
// new folder.
func version() string {
	h := sha256.New()
	_ = fs.WalkDir(files, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := files.ReadFile(path)
		fmt.Fprintf(h, "%s %d\n", path, len(b))
		h.Write(b)
		return err
	})
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// unpack writes runtime's scripts to a fresh folder next to dir, installs
// their dependencies, and renames it to dir.
func unpack(ctx context.Context, runtime, dir string) error {
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return fmt.Errorf("adapters: unpack the %s adapters: %v", runtime, err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), runtime+".tmp-")
	if err != nil {
		return fmt.Errorf("adapters: unpack the %s adapters: %v", runtime, err)
	}
	defer os.RemoveAll(tmp) // gone once renamed
	entries, err := files.ReadDir(runtime)
	if err != nil {
		return fmt.Errorf("adapters: no %s adapters in this binary", runtime)
	}
	for _, e := range entries {
		b, err := files.ReadFile(runtime + "/" + e.Name())
		if err == nil {
			err = os.WriteFile(filepath.Join(tmp, e.Name()), b, 0o644)
		}
		if err != nil {
			return fmt.Errorf("adapters: unpack %s: %v", e.Name(), err)
		}
	}
	if runtime == Node {
		if err := npmCI(ctx, tmp); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(tmp, complete), nil, 0o644); err != nil {
		return fmt.Errorf("adapters: unpack the %s adapters: %v", runtime, err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		if _, serr := os.Stat(filepath.Join(dir, complete)); serr == nil {
			return nil // another process got there first
		}
		return fmt.Errorf("adapters: unpack the %s adapters to %s: %v", runtime, dir, err)
	}
	return nil
}

// npmCI installs the Node adapters' pinned dependencies in dir.
func npmCI(ctx context.Context, dir string) error {
	if _, err := exec.LookPath("npm"); err != nil {
		return errors.New("the Node adapters need node and npm (20 or later) on PATH: apt-get install -y nodejs npm")
	}
	ctx, cancel := context.WithTimeout(ctx, NpmTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "npm", "ci", "--omit=dev", "--no-audit", "--no-fund")
	cmd.Dir = dir
	cmd.WaitDelay = time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("no result within %v", NpmTimeout)
		}
		return fmt.Errorf("adapters: npm ci for the Node adapters in %s failed (%v)%s", dir, err, lastLine(out.String()))
	}
	return nil
}

// lastLine is ": " and the last non-empty line of s, or "".
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if l := strings.TrimSpace(lines[len(lines)-1]); l != "" {
		return ": " + l
	}
	return ""
}
