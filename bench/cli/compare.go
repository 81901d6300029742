package cli

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/lockbench/lockbench/bench/selfcheck"
	"github.com/lockbench/lockbench/loadgen"
	"github.com/lockbench/lockbench/loadgen/store"
	"github.com/lockbench/lockbench/results"
	"github.com/lockbench/lockbench/servers"
)

// selfCheckOptions are the parsed and checked flags of a harness
// self-check's command (compare-redis, compare-postgres).
type selfCheckOptions struct {
	mf  metricsFlag
	cfg selfcheck.Config
}

// parseSelfCheck is the parse step of check c's command: its flags
// (selfcheck.Check.Register) and --metrics-addr.
func parseSelfCheck(c selfcheck.Check) func(args []string, stdout, stderr io.Writer) (selfCheckOptions, error) {
	return func(args []string, stdout, stderr io.Writer) (selfCheckOptions, error) {
		fs := newFlagSet(c.Name, stderr)
		var o selfCheckOptions
		o.mf.register(fs)
		c.Register(fs, &o.cfg)
		if err := parseFlags(fs, args, stdout); err != nil {
			return o, err
		}
		return o, o.cfg.Validate()
	}
}

// runSelfCheck is check c's command, `lockbench compare-redis` or
// `lockbench compare-postgres`: its flags, then the check, with
// lockbench's side of it a session on the check's servers. A missed
// --fail-below is a regression (exit 4).
func runSelfCheck(c selfcheck.Check) func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	parse := parseSelfCheck(c)
	return func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
		o, err := parse(args, stdout, stderr)
		if err != nil {
			return err
		}
		open := func(ep servers.Endpoints) (selfcheck.Harness, error) {
			s := &session{ep: ep, stderr: stderr, stores: map[loadgen.StoreKind]store.Store{}}
			if err := s.serveMetrics(o.mf); err != nil {
				s.Close()
				return nil, err
			}
			return checkSession{s}, nil
		}
		err = c.Run(ctx, o.cfg, open, stdout, stderr)
		if errors.Is(err, selfcheck.ErrBelowTarget) {
			return fmt.Errorf("%w: %w", ErrRegression, err)
		}
		return err
	}
}

// checkSession is lockbench's side of a self-check (selfcheck.Harness): a
// session on the check's servers, with --metrics-addr's live metrics.
type checkSession struct{ *session }

// Run runs o, its strategy on the session's servers, with the session's
// store and live metrics.
func (s checkSession) Run(ctx context.Context, o loadgen.Options) (results.Run, error) {
	target, err := s.target(o.Strategy)
	if err != nil {
		return results.Run{}, err
	}
	if o.Store, err = s.store(ctx, o.Scenario.Store); err != nil {
		return results.Run{}, err
	}
	o.Lock = target.Config
	endMetrics := s.observe(&o, results.FaultNone, 0)
	run, err := loadgen.Run(ctx, o)
	if err != nil {
		endMetrics("")
		return run, fmt.Errorf("%s: %s", o.Strategy.Name, servers.Redact(err.Error()))
	}
	endMetrics(run.Summary.Verdict)
	return run, nil
}

var _ selfcheck.Harness = checkSession{}
