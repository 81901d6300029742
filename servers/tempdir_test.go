package servers

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// exitedPid returns the pid of a process that has exited (and been
// reaped): a pid with no process, until the kernel hands it out again.
func exitedPid(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Skipf("cannot run true: %v", err)
	}
	return cmd.Process.Pid
}

// The next Start removes the temporary directories of lockbench
// processes that are gone, and only those.
func TestRemoveStale(t *testing.T) {
	me, ok := currentOwner()
	if !ok {
		t.Skip("no /proc: owners cannot be told apart here")
	}
	parent := t.TempDir()
	mk := func(name string, o *owner) string {
		dir := filepath.Join(parent, name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if o != nil {
			if err := os.WriteFile(filepath.Join(dir, ownerFileName), []byte(o.String()+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	with := func(f func(*owner)) *owner { o := me; f(&o); return &o }
	cases := []struct {
		name   string
		owner  *owner
		remove bool
	}{
		// Its process has exited: removed.
		{"lockbench-dead", with(func(o *owner) { o.pid = exitedPid(t) }), true},
		// Its pid is alive but started at another time: the kernel gave
		// the dead owner's pid to a new process. Removed.
		{"lockbench-reused-pid", with(func(o *owner) { o.start++ }), true},
		// Written before the machine last booted: removed.
		{"lockbench-other-boot", with(func(o *owner) { o.boot = "00000000-0000-0000-0000-000000000000" }), true},
		// This process, alive: kept.
		{"lockbench-live", &me, false},
		// Another pid namespace (a container sharing /tmp): its pids
		// cannot be looked up from here, so it is kept.
		{"lockbench-other-ns", with(func(o *owner) { o.pid, o.pidNS = exitedPid(t), "pid:[1]" }), false},
		// No owner file: not known to be lockbench's, or its owner was
		// killed before writing it. Kept.
		{"lockbench-unmarked", nil, false},
		// Not named like lockbench's: kept whatever it holds.
		{"someone-else", with(func(o *owner) { o.pid = exitedPid(t) }), false},
	}
	for _, tc := range cases {
		mk(tc.name, tc.owner)
	}
	// A malformed owner file is no owner: kept.
	bad := mk("lockbench-garbled", nil)
	if err := os.WriteFile(filepath.Join(bad, ownerFileName), []byte("pid=12 start=x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A file, not a directory, with the prefix: kept.
	if err := os.WriteFile(filepath.Join(parent, "lockbench-file"), nil, 0o644); err != nil {
		t.Fatal(err)
	}

	removeStale(parent, me)
	for _, tc := range cases {
		_, err := os.Stat(filepath.Join(parent, tc.name))
		if gone := os.IsNotExist(err); gone != tc.remove {
			t.Errorf("%s: removed = %v; want %v", tc.name, gone, tc.remove)
		}
	}
	for _, kept := range []string{"lockbench-garbled", "lockbench-file"} {
		if _, err := os.Stat(filepath.Join(parent, kept)); err != nil {
			t.Errorf("%s: %v; want it kept", kept, err)
		}
	}
}

// A new temporary directory names this process as its owner.
func TestNewTempDirOwner(t *testing.T) {
	me, ok := currentOwner()
	if !ok {
		t.Skip("no /proc: owners cannot be told apart here")
	}
	dir, err := newTempDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, ownerFileName))
	if err != nil {
		t.Fatal(err)
	}
	got, ok := parseOwner(b)
	if !ok || got != me {
		t.Errorf("owner file %q reads as %+v (ok %v); want %+v", b, got, ok, me)
	}
	if got.gone(me) {
		t.Errorf("this process counts as gone; want alive")
	}
	if !strings.HasPrefix(filepath.Base(dir), tempDirPattern) {
		t.Errorf("dir %s; want its name to start with %s", dir, tempDirPattern)
	}
}

// A Start that fails once its temporary directory exists removes it, and
// removes the directories crashed runs left behind on its way.
func TestFailedStartLeavesNoTempDir(t *testing.T) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		if _, err := os.Stat("/usr/bin/redis-server"); err != nil {
			t.Skip("redis-server is not installed (make deps)")
		}
	}
	me, ok := currentOwner()
	if !ok {
		t.Skip("no /proc: owners cannot be told apart here")
	}
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	crashed := me
	crashed.pid = exitedPid(t)
	stale := filepath.Join(tmp, tempDirPattern+"crashed")
	if err := os.MkdirAll(filepath.Join(stale, "postgres"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(stale, ownerFileName), []byte(crashed.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	// A deadline no server can meet: Start fails waiting for redis-0.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	c, err := Start(ctx, Needs{Redis: 1}, Options{})
	if err == nil {
		c.Stop()
		t.Skip("redis-server came up within 20ms; cannot make Start fail this way")
	}
	left, _ := filepath.Glob(filepath.Join(tmp, tempDirPattern+"*"))
	if len(left) > 0 {
		t.Errorf("after a failed Start (%v), %v are left in TMPDIR; want none", err, left)
	}
}
