package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/lockbench/lockbench/conformance"
	"github.com/lockbench/lockbench/servers"
	"github.com/lockbench/lockbench/strategies"
	"github.com/lockbench/lockbench/strategies/adapter"
)

// ErrCheckFailed is returned by adapter-check when a case failed; the
// command exits 1.
var ErrCheckFailed = errors.New("adapter-check: cases failed")

// adapterCheckTTL is the TTL of adapter-check's preflight lock: 2 seconds.
const adapterCheckTTL = 2 * time.Second

// parseAdapterCheck parses `lockbench adapter-check PATH [ARGS]`: the
// strategy name exec:PATH ARGS.
func parseAdapterCheck(args []string, stdout, stderr io.Writer) (string, error) {
	fs := newFlagSet("adapter-check", stderr)
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(stdout, "usage of lockbench adapter-check PATH [ARGS]: the conformance cases against the adapter PATH ARGS (docs/adapters.md)")
		return "", flag.ErrHelp
	} else if err != nil {
		return "", flagUsageErr(fs, err)
	}
	if fs.NArg() == 0 {
		return "", usageErr("adapter-check: want PATH [ARGS] of an adapter")
	}
	cmd := strings.Join(fs.Args(), " ")
	if strings.Contains(cmd, ",") {
		return "", usageErr("adapter-check: %q: an adapter's arguments may not contain commas", cmd)
	}
	return adapter.ExecPrefix + cmd, nil
}

// runAdapterCheck is `lockbench adapter-check PATH [ARGS]`: the
// conformance cases against an adapter, on servers it starts (or a user's,
// from the LOCKBENCH_* variables; the cases that stop servers then skip),
// one line per case.
func runAdapterCheck(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	name, err := parseAdapterCheck(args, stdout, stderr)
	if err != nil {
		return err
	}
	// PATH --hello, within 5s: a broken adapter is one line.
	info, err := strategies.Resolve(name)
	if err != nil {
		return err
	}
	var need servers.Needs
	need.Add(info.Need)
	ep, cl, err := servers.Ensure(ctx, need, servers.EndpointsFromEnv(), servers.Options{})
	if err != nil {
		return err
	}
	if cl != nil {
		defer cl.Stop()
	}
	target, err := servers.TargetFor(info.Need, ep, cl)
	if err != nil {
		return err
	}
	// One start before the cases: an adapter that breaks once started
	// (no hello, garbage, no answer) is one line, not a case per line.
	cfg := target.Config
	cfg.TTL, cfg.Owner = adapterCheckTTL, "adapter-check"
	s, err := info.Open(ctx, cfg)
	if err != nil {
		return err
	}
	_ = s.Close()
	failed := 0
	for i, c := range conformance.CaseNames() {
		if ctx.Err() != nil {
			return fmt.Errorf("%w: adapter-check stopped after %d of %d cases", ErrInterrupted, i, len(conformance.CaseNames()))
		}
		o := &caseT{name: c}
		o.run(func(t conformance.T) { conformance.RunCase(t, info, target, c) })
		switch {
		case o.failed:
			failed++
			fmt.Fprintf(stdout, "FAIL  %-28s %s\n", c, servers.Redact(o.message))
		case o.skipped:
			fmt.Fprintf(stdout, "skip  %-28s %s\n", c, servers.Redact(o.message))
		default:
			fmt.Fprintf(stdout, "PASS  %s\n", c)
		}
	}
	if failed > 0 {
		return fmt.Errorf("%w: %s (%s): %d failed", ErrCheckFailed, info.Name, strings.TrimPrefix(name, adapter.ExecPrefix), failed)
	}
	fmt.Fprintf(stdout, "%s: every case passed\n", info.Name)
	return nil
}
