package main

import (
	"os/exec"
	"strings"
	"testing"
)

// The layers import downwards only: the engine and everything below it
// (loadgen, strategies, conformance, faults, servers, results, report)
// never reach the command layer; the faults sit beside the engine they
// drive, which never reaches them; the record (results) reaches neither
// the engine, the strategies nor the report that draws it; the report
// draws the record alone (the strategies' order and colours reach it from
// the command layer, report.Styles).
func TestLayers(t *testing.T) {
	const mod = "github.com/lockbench/lockbench/"
	command := []string{"cmd/", "bench/cli", "bench/metrics", "bench/selfcheck"}
	rules := []struct {
		pkgs    []string
		forbids []string
	}{
		{[]string{"./loadgen/...", "./strategies/...", "./conformance/...", "./servers/...", "./faults/...", "./results/...", "./report/...", "./plan/..."}, command},
		{[]string{"./results/..."}, []string{"loadgen", "strategies", "report", "servers", "bench/"}},
		{[]string{"./strategies/..."}, []string{"loadgen", "results", "report", "servers", "conformance", "bench/"}},
		{[]string{"./loadgen/..."}, []string{"report", "servers", "conformance", "faults", "bench/"}},
		{[]string{"./faults/..."}, []string{"report", "conformance", "bench/"}},
		{[]string{"./report/..."}, []string{"loadgen", "strategies", "servers", "faults", "conformance", "plan", "bench/"}},
	}
	for _, r := range rules {
		args := []string{"list", "-deps"}
		for _, p := range r.pkgs {
			args = append(args, mod+strings.TrimPrefix(p, "./"))
		}
		out, err := exec.Command("go", args...).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %v: %v\n%s", r.pkgs, err, out)
		}
		for _, dep := range strings.Fields(string(out)) {
			rel, ok := strings.CutPrefix(dep, mod)
			if !ok {
				continue
			}
			for _, f := range r.forbids {
				if strings.HasPrefix(rel, f) {
					t.Errorf("%v depend on %s, a layer above them", r.pkgs, rel)
				}
			}
		}
	}
}
