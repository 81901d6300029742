package cli

import (
	"bytes"
	"context"
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
