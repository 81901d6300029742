package cli

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"

	"github.com/lockbench/lockbench/strategies"
)

// mustInfos are the registry entries of names.
func mustInfos(names ...string) []strategies.Info {
	out := make([]strategies.Info, len(names))
	for i, n := range names {
		out[i] = strategies.MustLookup(n)
	}
	return out
}

// `lockbench run` looks each strategy up by name once, when it reads
// --strategy, and passes its entry on: the flags, the session, the trials
// and the load generator take the Info, not the name.
func TestRunLooksUpOnce(t *testing.T) {
	for _, c := range []struct {
		args []string
		want int64
	}{
		{[]string{"--strategy", "mutex"}, 1},
		{[]string{"--strategy", "nolock,mutex", "--trials", "2"}, 2},
		// Each instance process looks its strategy up in its own process.
		{[]string{"--strategy", "mutex", "--instances", "2", "--instance-mode", "process"}, 1},
	} {
		args := append([]string{"run", "--payments", "40", "--out", t.TempDir()}, c.args...)
		before := strategies.Lookups()
		var out, errb bytes.Buffer
		if err := Run(context.Background(), args, &out, &errb); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, errb.String())
		}
		if got := strategies.Lookups() - before; got != c.want {
			t.Errorf("%v: %d lookups by name; want %d (one per strategy named)", c.args, got, c.want)
		}
	}
}

// run refuses, before any load, a node fault its servers cannot take: on a
// strategy with no server, or on servers the user gave; and each of its
// cells carries --redis-wait, which the executor sets per cell.
func TestRunFaultRefusedAndWait(t *testing.T) {
	var out, errb bytes.Buffer
	err := Run(context.Background(), []string{"run", "--strategy", "mutex", "--fault", "kill-node", "--payments", "40", "--out", t.TempDir()}, &out, &errb)
	if err == nil || ExitCode(err, io.Discard) != 2 || !strings.Contains(err.Error(), "mutex has no server for the fault to act on") {
		t.Errorf("run --strategy mutex --fault kill-node: %v (exit %d); want exit 2 saying mutex has no server for the fault", err, ExitCode(err, io.Discard))
	}
	o, err := parseRun([]string{"--strategy", "setnx,redlock", "--redis-topology", "sentinel", "--redis-wait", "1", "--fault", "none", "--fault", "pause"}, &out, &errb)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range o.cells {
		if c.wait != 1 {
			t.Errorf("%s: wait %d; want --redis-wait's 1", c.label(), c.wait)
		}
	}
}
