package cli

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/lockbench/lockbench/loadgen"
	"github.com/lockbench/lockbench/report"
)

// --store-transport sequenced is taken where the runs have local instance
// processes: run with --instance-mode process, or with a fault that makes
// them (pause); verdicts and matrix when some cell has them.
func TestStoreTransportAccepted(t *testing.T) {
	for _, args := range [][]string{
		{"run", "--instance-mode", "process", "--store-transport", "sequenced"},
		{"run", "--fault", "pause", "--store-transport", "sequenced"},
		{"run", "--instance-mode", "process", "--store-transport", "sync"},
		{"plan", "--instance-mode", "process", "--store-transport", "sequenced"},
		{"verdicts", "--fault", "pause", "--store-transport", "sequenced"},
		{"matrix", "--quick", "--store-transport", "sequenced"},
	} {
		var err error
		switch args[0] {
		case "run":
			var o runOptions
			if o, err = parseRun(args[1:], io.Discard, io.Discard); err == nil && o.ef.transport != args[len(args)-1] {
				t.Errorf("%v: transport %q; want %q", args, o.ef.transport, args[len(args)-1])
			}
		case "plan":
			_, err = parsePlan(args[1:], io.Discard, io.Discard)
		case "verdicts":
			_, err = parseVerdicts(args[1:], io.Discard, io.Discard)
		case "matrix":
			_, err = parseMatrix(args[1:], io.Discard, io.Discard)
		}
		if err != nil {
			t.Errorf("%v: %v; want it accepted", args, err)
		}
	}
}

// transportRunLimit bounds each run of TestStoreTransportRecorded: 2
// minutes, most of it starting Postgres.
const transportRunLimit = 2 * time.Minute

// A run records the store transport it used in its params (and --from
// its row runs on it again); one that asked for the sequenced store and
// cannot have it (here: the Postgres store) runs sync and says so on
// stderr, once.
func TestStoreTransportRecorded(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Postgres; run without -short")
	}
	for _, tc := range []struct {
		name  string
		extra []string
		want  string // params.store_transport
		said  bool   // the fallback line on stderr
	}{
		{name: "sequenced", extra: []string{"--instance-mode", "process", "--store-transport", "sequenced"}, want: loadgen.TransportSequenced},
		{name: "sync", extra: []string{"--instance-mode", "process", "--store-transport", "sync"}, want: loadgen.TransportSync},
		// Local instance processes are sequenced by default.
		{name: "default", extra: []string{"--instance-mode", "process"}, want: loadgen.TransportSequenced},
		// In-process instances have no transport.
		{name: "goroutine", want: ""},
		{name: "postgres", extra: []string{"--instance-mode", "process", "--store", "postgres", "--store-transport", "sequenced"}, want: loadgen.TransportSync, said: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			args := append([]string{"run", "--strategy", "mutex", "--payments", "100", "--instances", "2", "--out", dir}, tc.extra...)
			ctx, cancel := context.WithTimeout(context.Background(), transportRunLimit)
			defer cancel()
			var errb bytes.Buffer
			if err := Run(ctx, args, io.Discard, &errb); err != nil {
				t.Fatalf("lockbench %s: %v\n%s", strings.Join(args, " "), err, errb.String())
			}
			sums, _, err := report.ReadSummaries(dir)
			if err != nil {
				t.Fatal(err)
			}
			if len(sums) != 1 || sums[0].Params.StoreTransport != tc.want {
				t.Fatalf("%d rows, store transport %q; want 1 row and %q", len(sums), sums[0].Params.StoreTransport, tc.want)
			}
			// The row runs again on the transport it used.
			again := tc.want
			if o, err := parseRun([]string{"--from", dir}, io.Discard, io.Discard); err != nil || o.ef.transport != again {
				t.Errorf("--from the row: transport %q, %v; want %q", o.ef.transport, err, again)
			}
			const line = "lockbench: mutex: store transport sync, not sequenced: the store is postgres, not memory"
			if n := strings.Count(errb.String(), "store transport sync, not sequenced"); tc.said && (n != 1 || !strings.Contains(errb.String(), line)) || !tc.said && n != 0 {
				t.Errorf("stderr %q; want the fallback line %v (once: %q)", errb.String(), tc.said, line)
			}
		})
	}
}
