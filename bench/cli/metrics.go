package cli

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"strconv"

	"github.com/lockbench/lockbench/bench/metrics"
	"github.com/lockbench/lockbench/loadgen"
)

// metricsFlag is --metrics-addr, on every command that runs load: serve
// live Prometheus metrics (package bench/metrics) while it runs.
type metricsFlag struct{ addr string }

func (mf *metricsFlag) register(fs *flag.FlagSet) {
	fs.Func("metrics-addr", "serve live Prometheus metrics at HOST:PORT"+metrics.Path+" while the command runs (an empty host is 127.0.0.1; default off)", func(v string) error {
		_, port, err := net.SplitHostPort(v)
		if n, perr := strconv.Atoi(port); err != nil || perr != nil || n < 0 || n > 65535 {
			return errors.New("want HOST:PORT such as 127.0.0.1:9464 (or :9464 for loopback)")
		}
		mf.addr = v
		return nil
	})
}

// liveMetrics is a session's metrics server.
type liveMetrics struct {
	exporter *metrics.Exporter
	server   *metrics.Server
}

// serveMetrics starts the metrics server of --metrics-addr for the
// session's runs, when one was asked for, and says where it is on stderr.
// Session.Close stops it.
func (s *session) serveMetrics(mf metricsFlag) error {
	if mf.addr == "" {
		return nil
	}
	e := metrics.New()
	srv, err := metrics.Listen(mf.addr, e)
	if err != nil {
		return fmt.Errorf("--metrics-addr %s: %w", mf.addr, errors.Unwrap(err))
	}
	s.live = &liveMetrics{exporter: e, server: srv}
	fmt.Fprintf(s.stderr, "metrics: %s\n", srv.URL())
	return nil
}

// closeMetrics stops the metrics server, if any.
func (s *session) closeMetrics() {
	if s.live != nil {
		_ = s.live.server.Close()
		s.live = nil
	}
}

// observe feeds the session's live metrics, if any, from the run o is
// about to make (its intervals and progress, beside its other Reporters),
// labelled with what the run is; the function it returns marks the run
// over, with its verdict ("" when it failed).
func (s *session) observe(o *loadgen.Options, fault string, trial int) (end func(verdict string)) {
	if s.live == nil {
		return func(string) {}
	}
	run := s.live.exporter.Run(metrics.Labels{
		Strategy: o.Strategy.Name, Scenario: o.Scenario.Name, Fault: fault,
		Variant: o.Scenario.Variant, Trial: metrics.TrialLabel(trial),
	})
	o.Reporter = loadgen.Tee(run.Reporter(), o.Reporter)
	return run.End
}
