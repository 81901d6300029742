package adapter_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/lockbench/lockbench/adapters"
	"github.com/lockbench/lockbench/strategies/adapter"
)

// envJavaMissing makes the test binary a process that looks for
// java-curator's command with one of its dependencies (java, javac or
// Curator's jar) pointed at a path that does not exist, prints the error,
// and exits.
const envJavaMissing = "LOCKBENCH_TEST_JAVA_MISSING"

// javaMissingMain runs it, when the test binary was started as one.
func javaMissingMain() {
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
