package servers

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/lockbench/lockbench/internal/atomicfile"
)

// Temporary directories: each Cluster's lives under os.TempDir, marked
// with an owner file, and Start removes those whose owner is gone
// ("Temporary directories" in the package doc).

const (
	// tempDirPattern names lockbench's temporary directories.
	tempDirPattern = "lockbench-"
	// ownerFileName is the owner file in each of them.
	ownerFileName = ".lockbench-owner"
)

// owner identifies a process across pid reuse.
type owner struct {
	pid   int
	start uint64 // start time, clock ticks after boot
	boot  string // /proc/sys/kernel/random/boot_id
	pidNS string // the target of /proc/self/ns/pid, "pid:[4026531836]"
}

// String is the owner file's content: one line of key=value fields.
func (o owner) String() string {
	return fmt.Sprintf("pid=%d start=%d boot=%s pidns=%s", o.pid, o.start, o.boot, o.pidNS)
}

// parseOwner reads an owner file; ok is false unless every field is there.
func parseOwner(b []byte) (o owner, ok bool) {
	seen := 0
	for _, f := range strings.Fields(string(b)) {
		k, v, _ := strings.Cut(f, "=")
		var err error
		switch k {
		case "pid":
			o.pid, err = strconv.Atoi(v)
		case "start":
			o.start, err = strconv.ParseUint(v, 10, 64)
		case "boot":
			o.boot = v
		case "pidns":
			o.pidNS = v
		default:
			continue
		}
		if err != nil || v == "" {
			return owner{}, false
		}
		seen++
	}
	return o, seen == 4 && o.pid > 0
}

// currentOwner is this process as an owner; ok is false where /proc does
// not say (not Linux), and then no directory is marked or removed.
func currentOwner() (owner, bool) {
	start, ok := startTime(os.Getpid())
	if !ok {
		return owner{}, false
	}
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return owner{}, false
	}
	ns, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		return owner{}, false
	}
	return owner{pid: os.Getpid(), start: start, boot: string(bytes.TrimSpace(boot)), pidNS: ns}, true
}

// startTime is the start time of process pid (field 22 of /proc/PID/stat);
// ok is false when there is no such process.
func startTime(pid int) (uint64, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	// The command name (field 2) is in parentheses and may hold spaces
	// and parentheses itself: count fields from the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	const startField = 22 - 3 // f[0] is field 3, the state
	if len(f) <= startField {
		return 0, false
	}
	t, err := strconv.ParseUint(f[startField], 10, 64)
	return t, err == nil
}

// gone reports whether o is known to have exited, as seen by me.
func (o owner) gone(me owner) bool {
	switch {
	case o.boot != me.boot:
		return true
	case o.pidNS != me.pidNS:
		return false // its pids are not ours to look up
	}
	start, ok := startTime(o.pid)
	return !ok || start != o.start
}

// newTempDir removes the stale temporary directories in parent (os.TempDir
// when "") and creates a new one there, marked as this process's. A
// directory whose owner file cannot be written is still returned: it is
// only not cleaned up after a crash.
func newTempDir(parent string) (string, error) {
	if parent == "" {
		parent = os.TempDir()
	}
	me, known := currentOwner()
	if known {
		removeStale(parent, me)
	}
	dir, err := os.MkdirTemp(parent, tempDirPattern)
	if err != nil {
		return "", err
	}
	if known {
		_ = atomicfile.WriteFile(filepath.Join(dir, ownerFileName), []byte(me.String()+"\n"))
	}
	return dir, nil
}

// RemoveStaleTempDirs removes the temporary directories of lockbench
// processes that are gone (killed before they could remove them) from
// os.TempDir, and returns their paths. Every lockbench command calls it
// when it starts, whether it starts servers or not.
func RemoveStaleTempDirs() []string {
	me, known := currentOwner()
	if !known {
		return nil
	}
	return removeStale(os.TempDir(), me)
}

// removeStale removes the lockbench directories in parent whose owner is
// gone (see the package doc) and returns their paths. Errors are ignored: a
// directory that cannot be removed now is tried again next time.
func removeStale(parent string, me owner) []string {
	entries, err := os.ReadDir(parent)
	if err != nil {
		return nil
	}
	var removed []string
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), tempDirPattern) {
			continue
		}
		dir := filepath.Join(parent, e.Name())
		b, err := os.ReadFile(filepath.Join(dir, ownerFileName))
		if err != nil {
			continue
		}
		if o, ok := parseOwner(b); ok && o.gone(me) && os.RemoveAll(dir) == nil {
			removed = append(removed, dir)
		}
	}
	return removed
}
