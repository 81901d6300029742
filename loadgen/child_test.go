package loadgen

import (
	"bytes"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// An instance process's GODEBUG gets childSchedTrace added to whatever
// its parent has, unless the parent sets schedtrace itself.
func TestChildGODEBUG(t *testing.T) {
	for _, tc := range []struct {
		parent, want string
		ours         bool
	}{
		{"", childSchedTrace, true},
		{"gctrace=1", "gctrace=1," + childSchedTrace, true},
		{"schedtrace=1000", "schedtrace=1000", false},
		{"gctrace=1, schedtrace=5,scheddetail=1", "gctrace=1, schedtrace=5,scheddetail=1", false},
		{"xschedtrace=1", "xschedtrace=1," + childSchedTrace, true},
	} {
		got, ours := childGODEBUG(tc.parent)
		if got != tc.want || ours != tc.ours {
			t.Errorf("childGODEBUG(%q) = %q, %v; want %q, %v", tc.parent, got, ours, tc.want, tc.ours)
		}
	}
	t.Setenv("GODEBUG", "gctrace=0")
	cmd := ChildCommand("/bin/true", []byte("{}"), 1, new(bytes.Buffer))
	var last string
	for _, kv := range cmd.Env {
		if v, ok := strings.CutPrefix(kv, "GODEBUG="); ok {
			last = v // exec.Cmd keeps the last of a name
		}
	}
	if last != "gctrace=0,"+childSchedTrace {
		t.Errorf("the child's GODEBUG is %q; want %q", last, "gctrace=0,"+childSchedTrace)
	}
	if _, ok := cmd.Stderr.(*schedTraceFilter); !ok {
		t.Errorf("the child's stderr is a %T; want the trace filter", cmd.Stderr)
	}
}

// The filter drops exactly the lines that start with "SCHED ", however the
// stream is cut into writes, and passes a partial line on at once unless
// it could still be a trace line.
func TestSchedTraceFilter(t *testing.T) {
	lines := []string{
		"SCHED 0ms: gomaxprocs=1 idleprocs=1 threads=4 spinningthreads=0 needspinning=0 idlethreads=1 runqueue=0 [0]\n",
		"lockbench instance: store: connection refused\n",
		"S\n", "SCHED\n", "SCHEDULE 1\n", "SCHED \n", "\n", "panic: boom\n", " SCHED not at the start\n",
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 500 {
		var in, want strings.Builder
		for range 1 + rng.IntN(12) {
			l := lines[rng.IntN(len(lines))]
			in.WriteString(l)
			if !strings.HasPrefix(l, "SCHED ") {
				want.WriteString(l)
			}
		}
		var got bytes.Buffer
		f := &schedTraceFilter{w: &got}
		b := []byte(in.String())
		for len(b) > 0 {
			k := 1 + rng.IntN(min(len(b), 20))
			if n, err := f.Write(b[:k]); n != k || err != nil {
				t.Fatalf("Write took %d, %v; want %d, nil", n, err, k)
			}
			b = b[k:]
		}
		if got.String() != want.String() {
			t.Fatalf("trial %d: %q gave %q; want %q", trial, in.String(), got.String(), want.String())
		}
	}

	var got bytes.Buffer
	f := &schedTraceFilter{w: &got}
	_, _ = f.Write([]byte("fatal error: "))
	if got.String() != "fatal error: " {
		t.Errorf("a partial line gave %q; want it passed on at once", got.String())
	}
	got.Reset()
	_, _ = f.Write([]byte("x\nSCH"))
	if got.String() != "x\n" {
		t.Errorf("got %q; want %q, with %q held until it is decided", got.String(), "x\n", "SCH")
	}
}

// envTraceHelper makes the test binary TestSchedTraceHelper's child.
const envTraceHelper = "LOCKBENCH_TEST_TRACE_HELPER"

// The Go runtime's own trace lines, as a real child process writes them
// (a print per field), are what the filter drops: a child with a 5 ms
// schedtrace, which also writes a line of its own, comes out as that line
// alone.
func TestSchedTraceHelper(t *testing.T) {
	if os.Getenv(envTraceHelper) != "" {
		time.Sleep(60 * time.Millisecond)
		os.Stderr.WriteString("instance says hello\n")
		time.Sleep(30 * time.Millisecond)
		os.Exit(0)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^TestSchedTraceHelper$")
	cmd.Env = append(os.Environ(), envTraceHelper+"=1", "GODEBUG=schedtrace=5")
	var raw, filtered bytes.Buffer
	f := &schedTraceFilter{w: &filtered}
	cmd.Stderr = writerFunc(func(b []byte) (int, error) {
		raw.Write(b)
		return f.Write(b)
	})
	if err := cmd.Run(); err != nil {
		t.Fatalf("helper: %v: %s", err, raw.String())
	}
	if n := strings.Count(raw.String(), "SCHED "); n < 2 {
		t.Fatalf("the child wrote %d trace lines; want several (GODEBUG=schedtrace=5 over 90 ms): %q", n, raw.String())
	}
	if filtered.String() != "instance says hello\n" {
		t.Errorf("filtered stderr %q; want only the child's own line", filtered.String())
	}
}

// writerFunc is an io.Writer of a function.
type writerFunc func([]byte) (int, error)

func (w writerFunc) Write(b []byte) (int, error) { return w(b) }
