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
	"syscall"
	"time"
)

//go:embed node/*.js node/package.json node/package-lock.json python/*.py java/*.java
var files embed.FS

// NpmTimeout bounds `npm ci` on first use: 3 minutes.
const NpmTimeout = 3 * time.Minute

// JavacTimeout bounds the compile of the Java adapters on first use: 2
// minutes (it takes under a second on an idle 2-core machine).
const JavacTimeout = 2 * time.Minute

// Runtimes of the shipped adapters: the folder each one's scripts are in.
const (
	Node   = "node"
	Python = "python"
	Java   = "java"
)

// JavaJar is a jar the Java adapters are compiled and run against, and the
// Debian package that installs it.
type JavaJar struct {
	Path, Package string
}

// The Java adapters run on Debian's own JDK and jars, whatever java comes
// first on PATH: the jars' manifests name the jars they need in turn
// (curator-recipes.jar: curator-framework, curator-client, zookeeper,
// guava, slf4j-api), so the classpath is these and the compiled classes.
// Variables so that a test can point them elsewhere.
var (
	// JavaPath runs the Java adapters; JavacPath compiles them.
	JavaPath  = "/usr/bin/java"
	JavacPath = "/usr/bin/javac"
	// JDKPackage is the Debian package of javac (and java).
	JDKPackage = "default-jdk-headless"
	// JavaJars: Curator's recipes, and slf4j's simple binding, which
	// prints the libraries' warnings to stderr (without it slf4j drops them).
	JavaJars = []JavaJar{
		{Path: "/usr/share/java/curator-recipes.jar", Package: "libcurator-recipes-java"},
		{Path: "/usr/share/java/slf4j-simple.jar", Package: "libslf4j-java"},
	}
)

// CheckJava says, in one line, what to install for tool (JavaPath or
// JavacPath) and the Java adapters' jars to be there; nil when they are.
func CheckJava(tool string) error {
	if _, err := os.Stat(tool); err != nil {
		return fmt.Errorf("the Java adapters need Debian's JDK (%s): apt-get install -y %s", tool, JDKPackage)
	}
	for _, j := range JavaJars {
		if _, err := os.Stat(j.Path); err != nil {
			return fmt.Errorf("the Java adapters need Debian's %s (%s): apt-get install -y %s", j.Package, j.Path, j.Package)
		}
	}
	return nil
}

// JavaClasspath is the classpath of the Java adapters compiled in dir.
func JavaClasspath(dir string) string {
	cp := []string{dir}
	for _, j := range JavaJars {
		cp = append(cp, j.Path)
	}
	return strings.Join(cp, string(os.PathListSeparator))
}

// complete marks a runtime's folder as fully unpacked (and installed).
const complete = ".complete"

var (
	mu    sync.Mutex
	ready = map[string]string{} // runtime → its unpacked folder
)

// Dir returns the folder of runtime's adapters (Node, Python or Java),
// unpacking them first if this version has not been yet, and for Node
// running `npm ci --omit=dev --no-audit --no-fund` there (bounded by
// NpmTimeout and ctx), for Java compiling them there with javac (bounded
// by JavacTimeout and ctx). Several processes may do so at once: each
// works in a folder of its own and renames it into place; the first
// rename wins. The Java compile is done by one process at a time (a lock
// file next to the folder): the others wait for it, within ctx and
// JavacTimeout, and use its classes. Its error is one line.
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
	name := runtime
	if runtime == Java {
		// Compiled against the jars: another version of them (a Debian
		// upgrade) compiles again.
		name += "-" + jarsKey()
	}
	dir := filepath.Join(cache, "lockbench", "adapters", version(), name)
	if isComplete(dir) {
		ready[runtime] = dir
		return dir, nil
	}
	if runtime == Java {
		unlock, err := lockFile(ctx, dir+".lock", JavacTimeout)
		if err != nil {
			return "", err
		}
		defer unlock()
		if isComplete(dir) { // compiled by the process that held the lock
			ready[runtime] = dir
			return dir, nil
		}
	}
	if err := unpack(ctx, runtime, dir); err != nil {
		return "", err
	}
	ready[runtime] = dir
	return dir, nil
}

// isComplete reports whether dir is a fully unpacked (and installed) folder.
func isComplete(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, complete))
	return err == nil
}

// jarsKey is a hash of JavaJars' sizes and modification times.
func jarsKey() string {
	h := sha256.New()
	for _, j := range JavaJars {
		if fi, err := os.Stat(j.Path); err == nil {
			fmt.Fprintf(h, "%s %d %d\n", j.Path, fi.Size(), fi.ModTime().UnixNano())
		} else {
			fmt.Fprintf(h, "%s missing\n", j.Path)
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:8]
}

// lockPoll is how often lockFile tries a lock another process holds.
const lockPoll = 50 * time.Millisecond

// lockFile takes an exclusive lock (flock) on the file path, made if need
// be, polling for it while another process holds it, until ctx ends or
// limit passes; unlock releases it. On a file system without flock it
// locks nothing: unpack's rename still keeps a folder whole.
func lockFile(ctx context.Context, path string, limit time.Duration) (unlock func(), err error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("adapters: lock %s: %v", path, err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("adapters: lock %s: %v", path, err)
	}
	fd := int(f.Fd())
	t0 := time.Now()
	timer := time.NewTimer(limit)
	defer timer.Stop()
	tick := time.NewTicker(lockPoll)
	defer tick.Stop()
	for {
		err := syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB)
		switch {
		case err == nil:
			return func() {
				_ = syscall.Flock(fd, syscall.LOCK_UN)
				_ = f.Close()
			}, nil
		case !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR):
			_ = f.Close()
			return func() {}, nil
		}
		select {
		case <-ctx.Done():
			_ = f.Close()
			return nil, fmt.Errorf("adapters: gave up after %v waiting for another process to compile the Java adapters (%v)",
				time.Since(t0).Round(time.Millisecond), ctx.Err())
		case <-timer.C:
			_ = f.Close()
			return nil, fmt.Errorf("adapters: another process has been compiling the Java adapters for over %v (it holds %s)", limit, path)
		case <-tick.C:
		}
	}
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
	switch runtime {
	case Node:
		if err := npmCI(ctx, tmp); err != nil {
			return err
		}
	case Java:
		if err := javac(ctx, tmp); err != nil {
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

// javac compiles the Java adapters in dir, where they stay: Java 11 (the
// oldest JDK the classes may then run on), against JavaJars.
func javac(ctx context.Context, dir string) error {
	if err := CheckJava(JavacPath); err != nil {
		return fmt.Errorf("adapters: %v", err)
	}
	srcs, err := filepath.Glob(filepath.Join(dir, "*.java"))
	if err != nil || len(srcs) == 0 {
		return fmt.Errorf("adapters: no Java sources in %s", dir)
	}
	names := make([]string, len(srcs))
	for i, src := range srcs {
		names[i] = filepath.Base(src)
	}
	ctx, cancel := context.WithTimeout(ctx, JavacTimeout)
	defer cancel()
	args := []string{
		// A short-lived JVM: no C2 compiler, the serial collector.
		"-J-XX:TieredStopAtLevel=1", "-J-XX:+UseSerialGC",
		"--release", "11", "-encoding", "UTF-8", "-proc:none", "-nowarn",
		"-cp", JavaClasspath(dir), "-d", dir,
	}
	cmd := exec.CommandContext(ctx, JavacPath, append(args, srcs...)...)
	cmd.Dir = dir
	cmd.WaitDelay = time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	t0 := time.Now()
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			// JavacTimeout's, or the caller's deadline or cancel.
			err = fmt.Errorf("stopped after %v: %v", time.Since(t0).Round(time.Millisecond), ctx.Err())
		}
		// dir, a temporary folder, is gone by the time this is read.
		return fmt.Errorf("adapters: javac of the Java adapters (%s) failed (%v)%s",
			strings.Join(names, ", "), err, firstError(out.String(), dir))
	}
	return nil
}

// firstError is ": " and javac's first error line in s (else its first
// non-empty line), its paths relative to dir; "" when s has no line.
func firstError(s, dir string) string {
	first := ""
	for _, l := range strings.Split(s, "\n") {
		l = strings.TrimSpace(strings.ReplaceAll(l, dir+string(filepath.Separator), ""))
		if l == "" {
			continue
		}
		if strings.Contains(l, "error:") {
			return ": " + l
		}
		if first == "" {
			first = l
		}
	}
	if first == "" {
		return ""
	}
	return ": " + first
}

// lastLine is ": " and the last non-empty line of s, or "".
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if l := strings.TrimSpace(lines[len(lines)-1]); l != "" {
		return ": " + l
	}
	return ""
}
