package selfcheck_test

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/lockbench/lockbench/bench/cli"
	"github.com/lockbench/lockbench/bench/selfcheck"
	_ "github.com/lockbench/lockbench/strategies/all" // as cmd/lockbench: the strategies lockbench runs
)

// compare-redis measures redis-benchmark, go-redis alone and lockbench in
// interleaved rounds and reports per-round ratios and CPU per cycle, and
// their medians. (What the ratio comes to is a benchmark's business, not a
// test's: on a shared machine it moves with the neighbours.)
func TestCompareRedis(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Redis and redis-benchmark; skipped with -short")
	}
	if _, err := exec.LookPath("redis-benchmark"); err != nil {
		t.Skip("redis-benchmark not installed (Debian: redis-tools)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out, errb bytes.Buffer
	// --fail-below 2 cannot be met: the command prints everything and
	// exits 4.
	err := cli.Run(ctx, []string{"compare-redis", "--rounds", "3", "--requests", "3000", "--clients", "8", "--fail-below", "2"}, &out, &errb)
	if err != nil && strings.HasPrefix(err.Error(), "servers:") {
		t.Skipf("local servers unavailable: %v", err)
	}
	if !errors.Is(err, selfcheck.ErrBelowTarget) {
		t.Fatalf("compare-redis --fail-below 2: %v; want ErrBelowTarget\n%s", err, errb.String())
	}
	if code := cli.ExitCode(err, &bytes.Buffer{}); code != 4 {
		t.Errorf("exit code %d; want 4", code)
	}
	t.Logf("\n%s", out.String())
	selfcheck.CompareTable(t, out.String(), 3)
	for _, want := range []string{
		"ratio lockbench / redis-benchmark: ", "median of 3 rounds",
		"ratio lockbench / go-redis alone:  ", "target ≥ 0.95",
		"ratio go-redis / redis-benchmark:  ",
		"cpu per cycle (medians): redis-benchmark ",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("no %q in:\n%s", want, out.String())
		}
	}
}

// compare-postgres runs pgbench, pgx alone and lockbench's pg-onconflict in
// interleaved rounds against the Postgres it starts, and prints compare-redis's
// table and closing lines.
func TestComparePostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Postgres and pgbench; skipped with -short")
	}
	if _, err := selfcheck.FindPgbench(); err != nil {
		t.Skip(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var out, errb bytes.Buffer
	err := cli.Run(ctx, []string{"compare-postgres", "--rounds", "2", "--requests", "2000", "--clients", "4"}, &out, &errb)
	if err != nil && strings.HasPrefix(err.Error(), "servers:") {
		t.Skipf("local servers unavailable: %v", err)
	}
	if err != nil {
		t.Fatalf("compare-postgres: %v\n%s", err, errb.String())
	}
	t.Logf("\n%s", out.String())
	selfcheck.CompareTable(t, out.String(), 2)
	for _, want := range []string{
		"ratio lockbench / pgbench:   ", "median of 2 rounds",
		"ratio lockbench / pgx alone: ", "target ≥ 0.95",
		"ratio pgx / pgbench:         ",
		"cpu per cycle (medians): pgbench ",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("no %q in:\n%s", want, out.String())
		}
	}
}
