package adapter_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lockbench/lockbench/adapters"
	"github.com/lockbench/lockbench/strategies"
	"github.com/lockbench/lockbench/strategies/adapter"
)

// envJavaMissing makes the test binary a process that looks for
// java-curator's command with one of its dependencies (java, javac or
// Curator's jar) pointed at a path that does not exist, prints the error,
// and exits.
const envJavaMissing = "LOCKBENCH_TEST_JAVA_MISSING"

// envJavac makes the test binary a process that looks for java-curator's
// command with adapters.JavacPath the given program (a wrapper of javac),
// and prints the error, or "ok" and the classes' folder.
const envJavac = "LOCKBENCH_TEST_JAVAC"

// javaMissingMain runs it (or envJavac's), when the test binary was
// started as one.
func javaMissingMain() {
	if javac := os.Getenv(envJavac); javac != "" {
		adapters.JavacPath = javac
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd, err := adapter.BuiltinCommand(ctx, "java-curator")
		if err != nil {
			fmt.Print(err)
		} else {
			fmt.Print("ok ", cmd.Dir)
		}
		os.Exit(0)
	}
	what := os.Getenv(envJavaMissing)
	if what == "" {
		return
	}
	switch what {
	case "java":
		adapters.JavaPath = "/nonexistent/java"
	case "javac":
		adapters.JavacPath = "/nonexistent/javac"
	case "jar":
		jars := append([]adapters.JavaJar{}, adapters.JavaJars...)
		jars[0].Path = "/nonexistent/curator-recipes.jar"
		adapters.JavaJars = jars
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := adapter.BuiltinCommand(ctx, "java-curator")
	fmt.Print(err)
	os.Exit(0)
}

// A machine without the JDK or Curator's jars gets one line naming the
// Debian package to install, within seconds: java and the jars are
// checked before each first start, javac before the compile (here in a
// cache of its own, so that it has to compile).
func TestJavaMissing(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for what, pkg := range map[string]string{"java": adapters.JDKPackage, "javac": adapters.JDKPackage, "jar": "libcurator-recipes-java"} {
		t.Run(what, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, exe)
			cmd.Env = append(os.Environ(), envJavaMissing+"="+what, "XDG_CACHE_HOME="+t.TempDir())
			t0 := time.Now()
			out, err := cmd.Output()
			took := time.Since(t0)
			if err != nil {
				t.Fatalf("%v", err)
			}
			got := string(out)
			want := "apt-get install -y " + pkg
			if !strings.HasPrefix(got, "java-curator") || !strings.HasSuffix(got, want) || strings.Contains(got, "\n") {
				t.Fatalf("with %s missing: %q; want one line naming java-curator and ending %q", what, got, want)
			}
			if took > 5*time.Second {
				t.Fatalf("with %s missing: the error took %v; want within seconds", what, took)
			}
			t.Logf("%s missing (%v): %s", what, took.Round(time.Millisecond), got)
		})
	}
}

// needJava skips a test without Debian's JDK and Curator's jars.
func needJava(t *testing.T) {
	t.Helper()
	if err := adapters.CheckJava(adapters.JavacPath); err != nil {
		t.Skip(err)
	}
}

// javaAdapter is the compiled Java adapter's folder, and a context
// bounding the test: 4 minutes, room for the first compile.
func javaAdapter(t *testing.T) (context.Context, string) {
	t.Helper()
	needJava(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	t.Cleanup(cancel)
	dir, err := adapters.Dir(ctx, adapters.Java)
	if err != nil {
		t.Fatal(err)
	}
	return ctx, dir
}

// fakeJavac writes a shell script that logs each run to log, then runs the
// real javac (or, with fail, prints a javac-like error naming a source
// in its working folder and exits 1).
func fakeJavac(t *testing.T, log string, fail bool) string {
	t.Helper()
	body := "#!/bin/sh\necho run >> " + log + "\nexec " + adapters.JavacPath + ` "$@"` + "\n"
	if fail {
		body = "#!/bin/sh\necho 'warning: [options] nothing' >&2\necho \"$PWD/JavaCurator.java:12: error: cannot find symbol\" >&2\nexit 1\n"
	}
	p := filepath.Join(t.TempDir(), "javac")
	if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// Instance processes that start at once with nothing compiled yet compile
// the Java adapters once between them: one compiles, holding the lock
// file, and the others wait and use its classes.
func TestJavaCompileOnce(t *testing.T) {
	needJava(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cache, log := t.TempDir(), filepath.Join(t.TempDir(), "javac.log")
	javac := fakeJavac(t, log, false)
	const n = 3
	outs := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, exe)
			cmd.Env = append(os.Environ(), envJavac+"="+javac, "XDG_CACHE_HOME="+cache)
			out, err := cmd.Output()
			outs[i] = string(out)
			if err != nil {
				outs[i] += " (" + err.Error() + ")"
			}
		}()
	}
	wg.Wait()
	for i, out := range outs {
		if !strings.HasPrefix(out, "ok ") || out != outs[0] {
			t.Errorf("process %d: %q; want ok and the folder all share (%q)", i, out, outs[0])
		}
	}
	b, _ := os.ReadFile(log)
	if runs := strings.Count(string(b), "run"); runs != 1 {
		t.Errorf("javac ran %d times for %d processes; want once", runs, n)
	}
}

// A failed compile is one line naming the sources and javac's first
// error, not the temporary folder it ran in (gone by then).
func TestJavacError(t *testing.T) {
	needJava(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), envJavac+"="+fakeJavac(t, "/dev/null", true), "XDG_CACHE_HOME="+t.TempDir())
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	got := string(out)
	if !strings.Contains(got, "JavaCurator.java, Noop.java, Protocol.java") || !strings.HasSuffix(got, ": JavaCurator.java:12: error: cannot find symbol") ||
		strings.Contains(got, ".tmp-") || strings.Contains(got, "\n") {
		t.Fatalf("javac failing: %q; want one line naming the sources and ending with its first error, without the temporary folder", got)
	}
	t.Log(got)
}

// The JVM's own output stays off the protocol's stdout: its warnings
// (here UseLargePages' on a machine without large pages: unified logging,
// on stdout by default) go to stderr, and JAVA_TOOL_OPTIONS and the like
// in lockbench's environment do not reach the adapter (the JVM would take
// options from them, and say so).
func TestJavaStdoutIsProtocol(t *testing.T) {
	needJava(t)
	for _, v := range adapter.JavaEnvUnset {
		t.Setenv(v, "-XX:+UseLargePages")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd, err := adapter.BuiltinCommand(ctx, "java-curator")
	if err != nil {
		t.Fatal(err)
	}
	c := exec.CommandContext(ctx, cmd.Path, append(append([]string{"-XX:+UseLargePages"}, cmd.Args...), "--hello")...)
	c.Env, c.Dir = cmd.Environ(), cmd.Dir
	var stdout, stderr bytes.Buffer
	c.Stdout, c.Stderr = &stdout, &stderr
	if err := c.Run(); err != nil {
		t.Fatalf("--hello: %v; stderr %q", err, stderr.String())
	}
	if want := adapter.BuiltinHello("java-curator") + "\n"; stdout.String() != want {
		t.Errorf("--hello printed %q on stdout; want the hello line alone", stdout.String())
	}
	if strings.Contains(stderr.String(), "Picked up") {
		t.Errorf("stderr %q: the JVM took options from the environment; want %v unset", stderr.String(), adapter.JavaEnvUnset)
	}
	t.Logf("stderr: %q", stderr.String())
}

// SIGTERM, SIGINT and SIGHUP kill a Java adapter by the signal (-Xrs), so
// that an adapter stopped along with lockbench is not lost: its calls fail
// as interrupted, not adapter_lost (a JVM handling them exits 143, 130
// or 129).
func TestJavaSignalIsInterrupt(t *testing.T) {
	ctx, dir := javaAdapter(t)
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP} {
		t.Run(sig.String(), func(t *testing.T) {
			if signal.Ignored(sig) {
				// Inherited (nohup ignores SIGHUP): the adapter ignores it too.
				t.Skipf("%v is ignored in this process, and so in the adapter it starts", sig)
			}
			s, err := adapter.New(ctx, adapter.JavaCommand(dir, "Noop"), strategies.Config{Owner: "instance-0"})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			pid := s.Pid()
			if err := syscall.Kill(pid, sig); err != nil {
				t.Fatal(err)
			}
			for deadline := time.Now().Add(10 * time.Second); syscall.Kill(pid, 0) == nil; time.Sleep(10 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("the adapter still runs 10 s after %v", sig)
				}
			}
			_, err = s.Acquire(timeout(5*time.Second), "k")
			if !errors.Is(err, strategies.ErrInterrupted) || errors.Is(err, strategies.ErrAdapterLost) {
				t.Fatalf("Acquire after %v: %v; want ErrInterrupted, not ErrAdapterLost", sig, err)
			}
		})
	}
}

// hangJava is a Java adapter on the Java protocol loop (Protocol.java)
// whose library hangs for keys hang-… (acquire) and slow-release-…
// (release), and throws an Error for error-…; with the argument
// nonblocking, its hello says it does not block (lockbench then sends
// timeout_ms 0).
const hangJava = `import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;

public final class Hang implements Protocol.Lock {
    public static void main(String[] args) {
        boolean blocking = !(args.length > 0 && args[0].equals("nonblocking"));
        Protocol.run("{\"hello\":\"lockbench-adapter\",\"protocol\":1,\"name\":\"java-hang\",\"library\":\"none\","
                + "\"library_version\":\"0\",\"backend\":\"none\",\"nodes\":0,\"lease\":\"session\","
                + "\"capabilities\":{\"token\":true,\"extend\":false,\"blocking\":" + blocking + "}}", args, Hang::new);
    }

    private final AtomicLong n = new AtomicLong();

    @Override
    public Protocol.Granted acquire(Map<String, Object> req, Protocol.Ctx ctx) throws Exception {
        String key = ctx.key();
        if (key.startsWith("hang-")) {
            Thread.sleep(60000);
        }
        if (key.startsWith("error-")) {
            throw new AssertionError("thrown by the library");
        }
        return new Protocol.Granted(key, n.incrementAndGet(), false);
    }

    @Override
    public void release(Object handle) throws Exception {
        if (((String) handle).startsWith("slow-release-")) {
            Thread.sleep(60000);
        }
    }

    @Override
    public String classify(Throwable e) {
        return "error";
    }
}
`

// The Java protocol loop answers for a library that does not: an acquire
// still running 0.5 s past its timeout_ms (0 too), a release still
// running 0.5 s past the acquire timeout (a release's deadline), and an
// acquire whose library throws an Error; and the adapter goes on serving,
// instead of being lost AnswerGrace after the deadline. The bounds tell
// the loop's answer (0.5 to 1.5 s) from none (the caller's 20 s deadline),
// with room for a busy machine.
func TestJavaOverdue(t *testing.T) {
	ctx, dir := javaAdapter(t)
	src := t.TempDir()
	if err := os.WriteFile(filepath.Join(src, "Hang.java"), []byte(hangJava), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.CommandContext(ctx, adapters.JavacPath, "--release", "11", "-proc:none", "-nowarn",
		"-cp", dir, "-d", src, filepath.Join(src, "Hang.java")).CombinedOutput(); err != nil {
		t.Fatalf("javac Hang.java: %v\n%s", err, out)
	}
	openHang := func(t *testing.T, args ...string) *adapter.Strategy {
		t.Helper()
		a := append(append([]string{}, adapter.JavaFlags...), "-cp", src+string(os.PathListSeparator)+adapters.JavaClasspath(dir), "Hang")
		cmd := adapter.Command{Path: adapters.JavaPath, Args: append(a, args...), Dir: dir, Unset: adapter.JavaEnvUnset}
		s, err := adapter.New(ctx, cmd, strategies.Config{Owner: "instance-0", AcquireTimeout: time.Second, TTL: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	// within checks that err is the loop's timeout answer (wrapping
	// context.DeadlineExceeded, not the adapter lost) after [lo, hi].
	within := func(t *testing.T, what string, err error, took, lo, hi time.Duration) {
		t.Helper()
		if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, strategies.ErrAdapterLost) || !strings.Contains(err.Error(), "no answer from the library") {
			t.Fatalf("%s: %v after %v; want the loop's timeout answer", what, err, took)
		}
		if took < lo || took > hi {
			t.Fatalf("%s answered after %v; want between %v and %v", what, took, lo, hi)
		}
	}

	t.Run("blocking", func(t *testing.T) {
		s := openHang(t)
		t0 := time.Now()
		_, err := s.Acquire(timeout(20*time.Second), "hang-1")
		within(t, "Acquire(hang-1), timeout_ms 1000", err, time.Since(t0), time.Second, 10*time.Second)

		t0 = time.Now()
		_, err = s.Acquire(timeout(20*time.Second), "error-1")
		if err == nil || errors.Is(err, strategies.ErrAdapterLost) || !strings.Contains(err.Error(), "AssertionError") || time.Since(t0) > 10*time.Second {
			t.Fatalf("Acquire(error-1): %v after %v; want the library's AssertionError answered at once", err, time.Since(t0))
		}

		l, err := s.Acquire(timeout(5*time.Second), "slow-release-1")
		if err != nil {
			t.Fatalf("Acquire(slow-release-1): %v", err)
		}
		t0 = time.Now()
		err = l.Release(timeout(20 * time.Second))
		within(t, "Release(slow-release-1)", err, time.Since(t0), time.Second, 10*time.Second)

		l, err = s.Acquire(timeout(5*time.Second), "ok-1")
		if err != nil {
			t.Fatalf("Acquire(ok-1) after the overdue ones: %v; want a lease from the adapter still serving", err)
		}
		if err := l.Release(timeout(5 * time.Second)); err != nil {
			t.Fatalf("Release(ok-1): %v", err)
		}
	})
	t.Run("timeout_ms-0", func(t *testing.T) {
		s := openHang(t, "nonblocking")
		t0 := time.Now()
		_, err := s.Acquire(timeout(20*time.Second), "hang-2")
		within(t, "Acquire(hang-2), timeout_ms 0", err, time.Since(t0), 400*time.Millisecond, 10*time.Second)
	})
}
