package cli

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// Golden tests for the command line, kept as benchstat keeps them: every
// command's -h, and the one-line error of each kind of bad input, in
// testdata/golden/*.golden. After a deliberate change to the help or to
// an error, rewrite them with
//
//	go test ./bench/cli -run Golden -update
//
// and review the diff of testdata/golden like any other change.

var update = flag.Bool("update", false, "rewrite the golden files of TestGolden* with the output they got")

// goldenDir holds the golden files.
const goldenDir = "testdata/golden"

// goldenFastLimit is how long a golden case may take: -h and bad input are
// refused while parsing, before any server starts, in well under this.
const goldenFastLimit = 2 * time.Second

// goldenResult is what one in-process invocation of the CLI did.
type goldenResult struct {
	code           int
	stdout, stderr string
	elapsed        time.Duration
	err            error
}

// goldenRun runs the CLI in-process as cmd/lockbench does (Run, then
// ExitCode on the same stderr). The context is cancelled after twice
// goldenFastLimit, so that a case that wrongly started something is
// stopped; the test fails it if it took longer than goldenFastLimit.
func goldenRun(t *testing.T, args []string) goldenResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*goldenFastLimit)
	defer cancel()
	done := make(chan goldenResult, 1)
	start := time.Now()
	go func() {
		var out, errb bytes.Buffer
		err := Run(ctx, args, &out, &errb)
		code := ExitCode(err, &errb)
		done <- goldenResult{code: code, stdout: out.String(), stderr: errb.String(), elapsed: time.Since(start), err: err}
	}()
	select {
	case r := <-done:
		if r.elapsed > goldenFastLimit {
			t.Errorf("lockbench %s took %s; want under %s (it must fail while parsing, before starting anything)", goldenArgs(args), r.elapsed.Round(time.Millisecond), goldenFastLimit)
		}
		return r
	case <-time.After(4 * goldenFastLimit):
		t.Fatalf("lockbench %s did not return within %s, even after its context was cancelled", goldenArgs(args), 4*goldenFastLimit)
		return goldenResult{}
	}
}

// goldenEnv clears every LOCKBENCH_* variable for the test: some are
// defaults shown by -h (the agent's TLS files) or change which input is
// bad (LOCKBENCH_REDIS_SENTINELS), so the goldens must not see the
// machine's.
func goldenEnv(t *testing.T) {
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "LOCKBENCH_") {
			t.Setenv(k, "") // restores the value after the test
			os.Unsetenv(k)
		}
	}
}

// goldenNormalise makes output independent of the machine and of the
// working directory: the test's temporary directory becomes $TMP. (No
// help text or error in the goldens holds anything else machine-dependent
// today; add a commented replacement here if one ever does.)
func goldenNormalise(s, tmp string) string {
	if tmp != "" {
		s = strings.ReplaceAll(s, tmp, "$TMP")
	}
	return s
}

// goldenFormat is the text of a golden file: the exit code on the first
// line, then stdout and stderr, each under its own header when not empty.
func goldenFormat(r goldenResult, tmp string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "exit %d\n", r.code)
	for _, part := range []struct{ name, text string }{{"stdout", r.stdout}, {"stderr", r.stderr}} {
		if part.text == "" {
			continue
		}
		fmt.Fprintf(&b, "-- %s --\n%s", part.name, goldenNormalise(part.text, tmp))
		if !strings.HasSuffix(part.text, "\n") {
			b.WriteString("\n")
		}
	}
	return b.String()
}

// goldenCompare compares got with the golden file name, or rewrites the
// file with -update.
func goldenCompare(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join(goldenDir, name)
	if *update {
		if err := os.MkdirAll(goldenDir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v; to create it run: go test ./bench/cli -run Golden -update", err)
	}
	if string(want) != got {
		t.Errorf("output differs from %s (- golden, + got):\n%s\nif the change is intended, run: go test ./bench/cli -run Golden -update", path, goldenDiff(string(want), got))
	}
}

// goldenDiff is a simple line diff of want and got: the longest common
// subsequence of lines, with the lines only in want marked -, those only
// in got marked +, and the common ones indented.
func goldenDiff(want, got string) string {
	a := strings.Split(strings.TrimSuffix(want, "\n"), "\n")
	b := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	// lcs[i][j] is the LCS length of a[i:] and b[j:].
	lcs := make([][]int, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out strings.Builder
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			fmt.Fprintf(&out, "  %s\n", a[i])
			i++
			j++
		case i < len(a) && (j == len(b) || lcs[i+1][j] >= lcs[i][j+1]):
			fmt.Fprintf(&out, "- %s\n", a[i])
			i++
		default:
			fmt.Fprintf(&out, "+ %s\n", b[j])
			j++
		}
	}
	return out.String()
}

// goldenArgs shows args as a command line, quoting those that need it.
func goldenArgs(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		if a == "" || strings.ContainsAny(a, " \t\n\"'\\") {
			a = fmt.Sprintf("%q", a)
		}
		q[i] = a
	}
	return strings.Join(q, " ")
}

// TestGoldenHelp keeps the help of lockbench (-h) and of every command
// (COMMAND -h), as commands() lists them, in testdata/golden/help-*.golden.
func TestGoldenHelp(t *testing.T) {
	goldenEnv(t)
	cases := []struct {
		file string
		args []string
	}{{"help-lockbench.golden", []string{"-h"}}}
	for _, c := range commands() {
		cases = append(cases, struct {
			file string
			args []string
		}{"help-" + c.name + ".golden", []string{c.name, "-h"}})
	}
	want := map[string]bool{}
	for _, tc := range cases {
		want[tc.file] = true
		t.Run(strings.TrimSuffix(tc.file, ".golden"), func(t *testing.T) {
			r := goldenRun(t, tc.args)
			if r.code != 0 {
				t.Errorf("lockbench %s: exit %d (err %v); want 0", goldenArgs(tc.args), r.code, r.err)
			}
			if strings.TrimSpace(r.stdout) == "" {
				t.Errorf("lockbench %s printed no help on stdout", goldenArgs(tc.args))
			}
			goldenCompare(t, tc.file, goldenFormat(r, ""))
		})
	}
	// A help golden of a command that is gone is stale.
	if !*update {
		stale, _ := filepath.Glob(filepath.Join(goldenDir, "help-*.golden"))
		for _, p := range stale {
			if !want[filepath.Base(p)] {
				t.Errorf("%s is the help of no command; remove it", p)
			}
		}
	}
}

// goldenFileName is the golden file of a bad-input case: bad-NAME.golden
// with NAME's runs of other characters than letters and digits as one -.
var goldenFileName = regexp.MustCompile(`[^a-z0-9]+`)

// TestGoldenBadInput keeps the one-line error of each kind of bad input in
// testdata/golden/bad-*.golden: exit 2 and one line on stderr naming the
// flag (or the command) and what is accepted. Every case is refused while
// parsing (check, Run's parse step alone, refuses it first), so none starts
// a server.
func TestGoldenBadInput(t *testing.T) {
	goldenEnv(t)
	tmp := t.TempDir()
	scenario := filepath.Join(tmp, "s.yaml")
	if err := os.WriteFile(scenario, []byte("instances: 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(tmp, "missing.yaml")
	cases := []struct {
		name string
		args []string
		want string // what the line must name: the flag or the command
	}{
		// Commands and their arguments.
		{"no command", []string{}, "missing command"},
		{"unknown command", []string{"launch"}, `unknown command "launch"`},
		{"unknown flag", []string{"run", "--speed", "9"}, "-speed"},
		{"stray argument", []string{"run", "fast"}, `"fast"`},
		{"strategies stray argument", []string{"strategies", "all"}, `"all"`},
		{"report without DIR", []string{"report"}, "report:"},
		{"report two DIRs", []string{"report", tmp, tmp}, "report:"},
		{"report DIR missing", []string{"report", filepath.Join(tmp, "nothing")}, "report:"},
		{"compare without DIR", []string{"compare"}, "compare:"},
		{"compare one DIR", []string{"compare", tmp}, "compare:"},
		{"compare DIR missing", []string{"compare", filepath.Join(tmp, "old"), filepath.Join(tmp, "new")}, "compare:"},
		{"agent without listen", []string{"agent"}, "--listen"},
		{"agent listen without port", []string{"agent", "--listen", "localhost"}, "--listen"},

		// Values of each type of flag.
		{"bad duration", []string{"run", "--duration", "soon"}, "-duration"},
		{"bad integer", []string{"run", "--workers", "many"}, "-workers"},
		{"bad boolean", []string{"run", "--json=maybe"}, "-json"},
		{"bad number", []string{"run", "--funding", "lots"}, "-funding"},
		{"negative count", []string{"run", "--payments", "-1"}, "--payments"},
		{"zero count", []string{"run", "--instances", "0"}, "--instances"},
		{"zero trials", []string{"verdicts", "--trials", "0"}, "-trials"},
		{"zero compare rounds", []string{"compare-redis", "--rounds", "0"}, "--rounds"},
		{"rate out of range", []string{"run", "--rate", "1e9"}, "--rate"},
		{"ttl out of range", []string{"run", "--ttl", "48h"}, "--ttl"},
		{"plan target rate NaN", []string{"plan", "--target-rate", "NaN"}, "-target-rate"},
		{"up redis out of range", []string{"up", "--redis", "33"}, "--redis"},
		{"compare threshold NaN", []string{"compare", "--fail-on-regression", "NaN", tmp, tmp}, "-fail-on-regression"},

		// Names from a fixed set.
		{"unknown strategy", []string{"run", "--strategy", "meteor-lock"}, "--strategy"},
		{"strategy list with a hole", []string{"run", "--strategy", "setnx,,etcd"}, "--strategy"},
		{"unknown fault", []string{"run", "--fault", "meteor"}, "--fault"},
		{"verdicts unknown fault", []string{"verdicts", "--fault", "meteor"}, "--fault"},
		{"unknown lock key", []string{"run", "--lock-key", "user"}, "-lock-key"},
		{"unknown store", []string{"run", "--store", "mysql"}, "-store"},
		{"unknown fencing", []string{"run", "--fencing", "maybe"}, "-fencing"},
		{"unknown instance mode", []string{"run", "--instance-mode", "thread"}, "-instance-mode"},
		{"unknown redis topology", []string{"run", "--redis-topology", "ring"}, "--redis-topology"},
		{"unknown store transport", []string{"plan", "--store-transport", "async"}, "-store-transport"},

		// Fault parameters.
		{"fault param unknown schedule", []string{"run", "--fault", "pause:schedule=sometimes"}, "bad schedule"},
		{"fault param for out of range", []string{"run", "--fault", "pause:for=2h"}, "bad for"},
		{"fault param range backwards", []string{"verdicts", "--fault", "kill-node:down=5s-1s"}, "bad down"},

		// Flags with a syntax of their own.
		{"bad account dist", []string{"run", "--account-dist", "zipf:0.5"}, "-account-dist"},
		{"bad hold", []string{"run", "--hold", "uniform:5ms"}, "-hold"},
		{"bad retry", []string{"run", "--retry", "forever"}, "-retry"},
		{"bad redis addrs", []string{"run", "--strategy", "setnx", "--redis-addrs", "localhost"}, "--redis-addrs"},
		{"bad metrics addr", []string{"run", "--metrics-addr", "localhost:99999"}, "-metrics-addr"},

		// Flags that conflict, or need another.
		{"from and scenario", []string{"run", "--from", tmp, "--scenario", scenario}, "--from"},
		{"row without from", []string{"run", "--row", "2"}, "--row"},
		{"redis wait without sentinel", []string{"run", "--redis-wait", "1"}, "--redis-wait"},
		{"redis wait timeout without wait", []string{"run", "--redis-wait-timeout", "100ms"}, "--redis-wait-timeout"},
		{"sequenced without processes", []string{"run", "--store-transport", "sequenced"}, "--store-transport"},
		{"deliveries beyond instances × workers", []string{"run", "--instances", "2", "--workers", "1", "--deliveries", "3"}, "--deliveries"},

		// Files.
		{"scenario file missing", []string{"run", "--scenario", missing}, "--scenario"},
		{"scenario a directory", []string{"run", "--scenario", tmp}, "--scenario"},
	}
	seen := map[string]bool{}
	for _, tc := range cases {
		file := "bad-" + strings.Trim(goldenFileName.ReplaceAllString(strings.ToLower(tc.name), "-"), "-") + ".golden"
		if seen[file] {
			t.Fatalf("two cases write %s", file)
		}
		seen[file] = true
		t.Run(tc.name, func(t *testing.T) {
			// Parse alone first: a case that parses would start servers.
			if err := check(tc.args); !isUsage(err) {
				t.Fatalf("lockbench %s: check = %v; want a usage error (bad input refused before anything starts)", goldenArgs(tc.args), err)
			}
			r := goldenRun(t, tc.args)
			if r.code != 2 {
				t.Errorf("lockbench %s: exit %d (err %v); want 2", goldenArgs(tc.args), r.code, r.err)
			}
			lines := strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n")
			if len(lines) != 1 || strings.TrimSpace(lines[0]) == "" {
				t.Errorf("lockbench %s: stderr has %d lines; want one, not empty:\n%s", goldenArgs(tc.args), len(lines), r.stderr)
			} else if !strings.Contains(lines[0], tc.want) {
				t.Errorf("lockbench %s: stderr %q does not name %q", goldenArgs(tc.args), lines[0], tc.want)
			}
			goldenCompare(t, file, goldenFormat(r, tmp))
		})
	}
	// A bad-input golden no case writes is stale.
	if !*update {
		stale, _ := filepath.Glob(filepath.Join(goldenDir, "bad-*.golden"))
		for _, p := range stale {
			if !seen[filepath.Base(p)] {
				t.Errorf("%s is the golden of no case; remove it", p)
			}
		}
	}
}
