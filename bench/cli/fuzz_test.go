package cli

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fuzzScenarioArg in a fuzzed command line stands for the path of a file
// holding the fuzzed scenario YAML.
const fuzzScenarioArg = "@scenario"

// fuzzTimeout is how long one input's parse step may take before it counts
// as a hang: parsing reads at most a few small files.
const fuzzTimeout = 10 * time.Second

// FuzzArgs drives every command's parse step (check: flags, the files they
// name, validation; nothing is started) with a command line — its
// arguments separated by NUL, as in an argv — and a scenario file, which
// the argument @scenario names. Every input either passes or is refused
// with a usage error, exit 2 and one line naming what is wrong; never a
// panic, another error, or a hang. The seed corpus is
// testdata/fuzz/FuzzArgs (plain `go test` runs it); `make test` fuzzes
// for a few seconds more.
func FuzzArgs(f *testing.F) {
	for _, seed := range []struct{ cmdline, scenario string }{
		{"run\x00--strategy\x00setnx\x00--payments\x0010", ""},
		{"run\x00--scenario\x00@scenario", "instances: 2\nworkers: 4\nhold: uniform:1ms-3ms\nlock_key: payment\n"},
		{"plan\x00--scenario\x00@scenario\x00--target-rate\x00500", "account_dist: zipf:1.5\nttl: 1s\n"},
		{"verdicts\x00--fault\x00pause,slow\x00--dry-run", ""},
		{"matrix\x00--quick\x00--dry-run", ""},
		{"plan\x00--dry-run", ""},
		{"up\x00--redis\x003", ""},
		{"compare-redis\x00--rounds\x003", ""},
		{"compare-postgres\x00--rounds\x003", ""},
		{"report\x00.", ""},
		{"compare\x00.\x00.", ""},
		{"strategies", ""},
	} {
		f.Add(seed.cmdline, []byte(seed.scenario))
	}
	f.Fuzz(func(t *testing.T, cmdline string, scenario []byte) {
		if strings.Contains(cmdline, "exec:") || bytes.Contains(scenario, []byte("exec:")) {
			// An exec: strategy's parse step runs PATH --hello, and a
			// broken adapter is exit 1 (TestAdapterBroken): no fuzzed
			// program runs.
			t.Skip("exec: runs its PATH")
		}
		args := strings.Split(cmdline, "\x00")
		path := filepath.Join(t.TempDir(), "scenario.yaml")
		if err := os.WriteFile(path, scenario, 0o644); err != nil {
			t.Fatal(err)
		}
		for i, a := range args {
			if a == fuzzScenarioArg {
				args[i] = path
			}
		}
		done := make(chan error, 1)
		go func() { done <- check(args) }()
		var err error
		select {
		case err = <-done:
		case <-time.After(fuzzTimeout):
			t.Fatalf("check(%q) still running after %s", args, fuzzTimeout)
		}
		if err == nil || errors.Is(err, flag.ErrHelp) {
			return
		}
		var errb bytes.Buffer
		if code := ExitCode(err, &errb); code != 2 {
			t.Fatalf("check(%q) = %v, exit %d; want nil or a usage error (exit 2)", args, err, code)
		}
		if msg := err.Error(); strings.ContainsAny(msg, "\n\r") {
			t.Errorf("check(%q): usage error %q spans several lines; want one", args, msg)
		}
		if line := strings.TrimSuffix(errb.String(), "\n"); line == "" || strings.Contains(line, "\n") {
			t.Errorf("check(%q): stderr %q; want one line", args, errb.String())
		}
	})
}

// Every command has a parse step the fuzz target can drive.
func TestEveryCommandIsChecked(t *testing.T) {
	for _, c := range commands() {
		if c.check == nil {
			t.Errorf("command %s has no check; want its parse step there", c.name)
		}
	}
}
