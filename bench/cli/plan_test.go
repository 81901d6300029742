package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockbench/lockbench/plan"
	"github.com/lockbench/lockbench/results"
)

// Bad plan input exits 2 with one line naming the flag.
func TestPlanBadInput(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"negative target", []string{"--target-rate", "-5"}, "-target-rate"},
		{"zero target", []string{"--target-rate", "0"}, "-target-rate"},
		{"malformed slo", []string{"--slo-p99", "fast"}, "-slo-p99"},
		{"negative slo", []string{"--slo-p99", "-1ms"}, "-slo-p99"},
		{"step factor 1", []string{"--rate-step", "1"}, "-rate-step"},
		{"refine out of range", []string{"--refine", "7"}, "--refine"},
		{"start above max", []string{"--start-rate", "500", "--max-rate", "100"}, "--start-rate"},
		{"rate is the sweep's", []string{"--rate", "100"}, "--rate"},
		{"duration is the sweep's", []string{"--duration", "5s"}, "--duration"},
		{"unknown strategy", []string{"--strategy", "meteor-lock"}, "--strategy"},
		{"missing verdicts", []string{"--verdicts", "/nonexistent/verdicts.json"}, "--verdicts"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			err := Run(context.Background(), append([]string{"plan", "--out", t.TempDir()}, tc.args...), &out, &errb)
			if code := ExitCode(err, &errb); code != 2 {
				t.Fatalf("exit code = %d (err %v); want 2", code, err)
			}
			line := strings.TrimSpace(errb.String())
			if strings.Contains(line, "\n") || !strings.Contains(line, tc.want) {
				t.Errorf("stderr = %q; want one line naming %q", line, tc.want)
			}
		})
	}
}

// A real, short plan against a local Redis: one strategy, two steps.
func TestPlanRun(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Redis; skipped with -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dir := t.TempDir()
	args := []string{"plan", "--strategy", "setnx", "--target-rate", "200", "--start-rate", "100", "--max-rate", "200",
		"--slo-p99", "1s", "--step-duration", "400ms", "--step-warmup", "100ms", "--refine", "0",
		"--instances", "2", "--workers", "2", "--out", dir}
	var out, errb bytes.Buffer
	start := time.Now()
	err := Run(ctx, args, &out, &errb)
	if err != nil && strings.HasPrefix(err.Error(), "servers:") {
		t.Skipf("local servers unavailable: %v", err)
	}
	if err != nil {
		t.Fatalf("plan: %v\n%s", err, errb.String())
	}
	t.Logf("plan took %s:\n%s", time.Since(start).Round(time.Millisecond), out.String())

	b, err := os.ReadFile(filepath.Join(dir, plan.File))
	if err != nil {
		t.Fatal(err)
	}
	var rep plan.Report
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatalf("plan.json: %v", err)
	}
	if len(rep.Strategies) != 1 || rep.Strategies[0].Strategy != "setnx" {
		t.Fatalf("plan.json strategies = %+v; want setnx only", rep.Strategies)
	}
	p := rep.Strategies[0]
	if len(p.Steps) == 0 || p.Steps[0].Rate != 100 {
		t.Errorf("steps = %+v; want the first at 100/s", p.Steps)
	}
	// A 1s SLO at 200/s holds on any machine that can run the tests.
	if p.MaxRate != 200 || !p.Fits || p.Headroom != 1 || p.LimitedBy != "--max-rate reached" {
		t.Errorf("max %g fits %v headroom %g limited by %q; want 200, true, 1, --max-rate reached", p.MaxRate, p.Fits, p.Headroom, p.LimitedBy)
	}
	if p.Cost.AtRate != 200 || p.Cost.AcquireP50Ns <= 0 {
		t.Errorf("cost = %+v; want acquire latency at 200/s", p.Cost)
	}
	if !strings.Contains(out.String(), "setnx") || !strings.Contains(out.String(), "fit 200 payments/s: setnx (1.0×)") {
		t.Errorf("table does not say setnx fits:\n%s", out.String())
	}
	// The sweep's runs are in the run directory, named "sweep", with chart 3.
	f, err := os.Open(filepath.Join(dir, results.SummaryJSONFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ss, err := results.ReadJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	if len(ss) != len(p.Steps) {
		t.Errorf("summary.json has %d runs; want %d (one per step)", len(ss), len(p.Steps))
	}
	for _, s := range ss {
		if s.Scenario != results.ScenarioSweep {
			t.Errorf("run scenario = %q; want %q", s.Scenario, results.ScenarioSweep)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, results.ChartsDir, "latency-throughput.png")); err != nil {
		t.Errorf("chart 3 missing: %v", err)
	}
	// plan.json is written through a temporary file, which must be gone.
	if tmp, _ := filepath.Glob(filepath.Join(dir, ".*.tmp-*")); len(tmp) > 0 {
		t.Errorf("temporary files left: %v; want none", tmp)
	}
}
