package selfcheck

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/lockbench/lockbench/internal/usage"
	"github.com/lockbench/lockbench/loadgen"
	"github.com/lockbench/lockbench/results"
	"github.com/lockbench/lockbench/servers"
)

// Ranges of a check's flags.
const (
	maxClients  = 1000
	minRequests = 1000
	maxRequests = 10_000_000
	maxRounds   = 100
	// DefaultRounds is --rounds' default: 8, even, so that as many rounds
	// run lockbench before the bare client as after it (roundOrder; on the
	// second EPYC VM the in-process measurement that ran second was the
	// slower more often than not).
	DefaultRounds = 8
	// maxFailBelow bounds --fail-below: a ratio to the bare client above 2
	// cannot be met.
	maxFailBelow = 2
)

// harnessTarget is the ratio of lockbench's lock-cycle rate to the bare
// client's that the checks aim at: 0.95, the harness taking at most 5%
// (its CPU per cycle, at most 5% more).
const harnessTarget = 0.95

// ErrBelowTarget is returned by Check.Run with Config.FailBelow R when
// lockbench's median ratio to the bare client is below R. The command
// makes it a regression (exit 4).
var ErrBelowTarget = errors.New("harness ratio below --fail-below")

// Check is one harness self-check: what it measures and its flags'
// defaults and wording. Redis and Postgres are the checks.
type Check struct {
	// Name is the command's name ("compare-redis"), which heads the
	// check's messages.
	Name string
	// clients and requests are --clients' and --requests' defaults.
	clients, requests int
	// tool is the native tool's client flag, test what it runs per
	// request, bare the bare client's column: words of the flags' help.
	tool, test, bare string
	run              func(ctx context.Context, cfg Config, open OpenHarness, stdout, stderr io.Writer) error
}

// The checks, with their flags' defaults and wording.
var (
	// Redis is compare-redis: setnx against redis-benchmark and go-redis
	// alone (runRedis). Its defaults: 50 clients, 100,000 requests a
	// measurement.
	Redis = Check{
		Name:    "compare-redis",
		clients: 50, requests: 100_000,
		tool: "redis-benchmark -c", test: "redis-benchmark test", bare: "go-redis alone",
		run: runRedis,
	}
	// Postgres is compare-postgres: pg-onconflict against pgbench and pgx
	// alone (runPostgres). Its defaults: 16 clients, 40,000 requests a
	// measurement.
	Postgres = Check{
		Name:    "compare-postgres",
		clients: 16, requests: 40_000,
		tool: "pgbench -c", test: "pgbench run", bare: "pgx alone",
		run: runPostgres,
	}
)

// Config is a check's settings, from its command's flags (Check.Register).
type Config struct {
	// Clients is the concurrent clients of each measurement (--clients):
	// the native tool's, the bare loop's goroutines, lockbench's workers.
	Clients int
	// Requests is the lock cycles of each measurement (--requests).
	Requests int
	// Rounds is the counted rounds, after one warm-up round (--rounds).
	Rounds int
	// FailBelow, when above 0, makes Run return ErrBelowTarget when the
	// median ratio of lockbench's rate to the bare client's is below it
	// (--fail-below).
	FailBelow float64
	// CPUProfile, when set, is the file the counted rounds' CPU profile
	// goes to (--cpuprofile).
	CPUProfile string
}

// Harness is lockbench's side of a check, which the command supplies
// (package cli's session). Run runs one load as `lockbench run` does: the
// check sets o's Strategy, Scenario and LoadSpan, the harness the
// strategy's servers, the store and any live metrics. Close closes what
// the harness opened.
type Harness interface {
	Run(ctx context.Context, o loadgen.Options) (results.Run, error)
	Close()
}

// OpenHarness opens a check's Harness on the servers the check started
// (ep).
type OpenHarness func(ep servers.Endpoints) (Harness, error)

// Register adds the check's flags to fs, --clients, --requests, --rounds,
// --fail-below and --cpuprofile, with their defaults set in cfg.
func (c Check) Register(fs *flag.FlagSet, cfg *Config) {
	fs.IntVar(&cfg.Clients, "clients", c.clients, fmt.Sprintf("concurrent clients (%s, lockbench workers), 1..%d", c.tool, maxClients))
	fs.IntVar(&cfg.Requests, "requests", c.requests, fmt.Sprintf("requests per %s, and lock cycles for lockbench, per round, %d..%d", c.test, minRequests, maxRequests))
	fs.IntVar(&cfg.Rounds, "rounds", DefaultRounds, fmt.Sprintf("rounds of the three measurements, interleaved, after one warm-up round, 1..%d; an even count runs as many with lockbench first as with the bare client first", maxRounds))
	fs.Float64Var(&cfg.FailBelow, "fail-below", 0, fmt.Sprintf("exit 4 when the median ratio of lockbench's rate to %s's is below R (0 < R ≤ %d; default off)", c.bare, maxFailBelow))
	fs.StringVar(&cfg.CPUProfile, "cpuprofile", "", fmt.Sprintf("write a CPU profile of the counted rounds to this file, samples labelled measure=bare (%s) or measure=lockbench: both run the same cycles, so `go tool pprof -tagfocus measure=lockbench` against `-tagfocus measure=bare` is the harness's cost function by function", c.bare))
}

// Validate reports the first setting out of its flag's range as a
// *usage.Error.
func (cfg Config) Validate() error {
	switch {
	case cfg.Clients < 1 || cfg.Clients > maxClients:
		return usage.Errorf("clients", "want 1..%d, got %d", maxClients, cfg.Clients)
	case cfg.Requests < minRequests || cfg.Requests > maxRequests:
		return usage.Errorf("requests", "want %d..%d, got %d", minRequests, maxRequests, cfg.Requests)
	case cfg.Rounds < 1 || cfg.Rounds > maxRounds:
		return usage.Errorf("rounds", "want 1..%d, got %d", maxRounds, cfg.Rounds)
	case !(cfg.FailBelow >= 0 && cfg.FailBelow <= maxFailBelow): // NaN too
		return usage.Errorf("fail-below", "want a ratio R with 0 < R ≤ %d (0: off), got %g", maxFailBelow, cfg.FailBelow)
	}
	return nil
}

// Run runs the check with cfg, lockbench's side opened by open on the
// servers the check starts, printing its table and closing lines to
// stdout and its progress to stderr. Cancelling ctx during the rounds
// ends it with the rounds done reported and a nil error.
func (c Check) Run(ctx context.Context, cfg Config, open OpenHarness, stdout, stderr io.Writer) error {
	return c.run(ctx, cfg, open, stdout, stderr)
}
