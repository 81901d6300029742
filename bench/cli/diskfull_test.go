package cli

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockbench/lockbench/report"
)

// mountTmpfs mounts a tmpfs of size (as mount's size= takes it) on a new
// directory, unmounted when the test ends. It needs root: without it the
// test is skipped, unless CI is set (CI runs as root, so the test must run
// there).
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		if os.Getenv("CI") != "" {
			t.Fatal("mounting a tmpfs needs root, and CI runs as root")
		}
		t.Skip("mounting a tmpfs needs root")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Fatalf("mount tmpfs: %v: %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

// exitOf is cmd's exit status once it has ended; -1 when it did not exit.
func exitOf(err error) int {
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.ExitCode()
	}
	return -1
}

// An --out too small for what the command will write is refused before
// anything starts: one line naming --out and the space needed, exit 2.
func TestOutTooSmall(t *testing.T) {
	if testing.Short() {
		t.Skip("builds lockbench and mounts a tmpfs; skipped with -short")
	}
	bin := lockbenchBinary(t)
	fs := mountTmpfs(t, "64k")
	tmp := t.TempDir()
	cmd := exec.Command(bin, "run", "--strategy", "nolock,setnx", "--payments", "3000", "--out", filepath.Join(fs, "run"))
	cmd.Env = childEnv(tmp)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	t0 := time.Now()
	err := cmd.Run()
	if code := exitOf(err); code != 2 {
		t.Fatalf("exit %d (%v); want 2. stderr:\n%s", code, err, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
	if len(lines) != 1 || !strings.Contains(lines[0], "--out") || !strings.Contains(lines[0], "64 KB free") || !strings.Contains(lines[0], "MB there") {
		t.Errorf("stderr:\n%s\nwant one line naming --out, the space free and the space needed", stderr.String())
	}
	if took := time.Since(t0); took > 10*time.Second {
		t.Errorf("took %v to refuse; want at once (no server started)", took)
	}
	if left, _ := filepath.Glob(filepath.Join(tmp, "lockbench-*")); len(left) > 0 {
		t.Errorf("servers' directories left: %v; want none started", left)
	}
}

// A disk that fills part-way makes the command exit 1 with one line per
// kind of file it could not write, and the rows written before stay
// readable. The test fills the tmpfs once summary.json holds a row.
func TestOutFullPartWay(t *testing.T) {
	if testing.Short() {
		t.Skip("builds lockbench, mounts a tmpfs and starts Redis; skipped with -short")
	}
	bin := lockbenchBinary(t)
	fs := mountTmpfs(t, "8m")
	out := filepath.Join(fs, "verdicts")
	tmp := t.TempDir()
	c := startChild(t, bin, tmp, "verdicts", "--strategy", "nolock,setnx,fencing", "--fault", "none,pause", "--out", out)
	rows := c.waitForRows(t, out, "before the disk was filled")
	fill(t, filepath.Join(fs, "filler"))
	err := c.wait(t, 3*time.Minute, "the disk filled")
	stderr := c.stderr.String()
	if code := exitOf(err); code != 1 {
		t.Fatalf("exit %d (%v); want 1. stderr:\n%s", code, err, stderr)
	}
	var failures []string
	kinds := map[string]bool{}
	for _, l := range strings.Split(stderr, "\n") {
		if rest, ok := strings.CutPrefix(l, "lockbench: could not write "); ok {
			failures = append(failures, l)
			kind := strings.Fields(rest)[0]
			if kinds[kind] {
				t.Errorf("two lines for one kind of file (%s):\n%s", kind, stderr)
			}
			kinds[kind] = true
		}
	}
	if len(failures) == 0 || !strings.Contains(stderr, "no space left on device") {
		t.Errorf("stderr:\n%s\nwant a line per kind of file not written, saying the disk is full", stderr)
	}
	ss, _, rerr := report.ReadSummaries(out)
	if rerr != nil || len(ss) < rows {
		t.Errorf("summary.json after the failure: %d rows, %v; want the %d written before, readable", len(ss), rerr, rows)
	}
}

// fill writes path until the file system is full.
func fill(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil && !errors.Is(err, syscall.ENOSPC) {
		t.Fatal(err)
	}
	if f == nil {
		return
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	for {
		if _, err := f.Write(buf); err != nil {
			if errors.Is(err, syscall.ENOSPC) {
				// What is left is less than a block: write it byte by
				// byte, so nothing at all fits.
				for {
					if _, err := f.Write(buf[:1]); err != nil {
						return
					}
				}
			}
			t.Fatal(err)
		}
	}
}
