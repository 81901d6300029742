package cli

import (
	"bytes"
	"context"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// compare-redis measures redis-benchmark, go-redis alone and lockbench in
// interleaved rounds and reports per-round ratios and their medians. (What
// the ratio comes to is a benchmark's business, not a test's: on a shared
// machine it moves with the neighbours.)
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
	err := Run(ctx, []string{"compare-redis", "--rounds", "3", "--requests", "3000", "--clients", "8"}, &out, &errb)
	if err != nil && strings.HasPrefix(err.Error(), "servers:") {
		t.Skipf("local servers unavailable: %v", err)
	}
	if err != nil {
		t.Fatalf("compare-redis: %v\n%s", err, errb.String())
	}
	t.Logf("\n%s", out.String())

	// The rows: the warm-up, rounds 1..3, then the median; each with three rates and
	// three ratios that agree with the rates.
	var ratios []float64
	rows := 0
	for _, line := range strings.Split(out.String(), "\n") {
		f := strings.Fields(line)
		if len(f) != 7 || (f[0] != "median" && f[0] != "warm-up" && f[0] != strconv.Itoa(rows+1)) {
			continue
		}
		var v [6]float64
		for i := range v {
			x, err := strconv.ParseFloat(f[i+1], 64)
			if err != nil || x <= 0 {
				t.Fatalf("row %q: column %d = %q; want a positive number", line, i+2, f[i+1])
			}
			v[i] = x
		}
		if f[0] == "warm-up" {
			if rows != 0 {
				t.Errorf("the warm-up round came after round %d", rows)
			}
			continue
		}
		if f[0] == "median" {
			if rows != 3 {
				t.Fatalf("median after %d rounds; want 3", rows)
			}
			if want := median(ratios); v[3]-want > 0.006 || want-v[3] > 0.006 {
				t.Errorf("median lockbench/redis-benchmark = %v; want the median of the rounds' %v = %.2f", v[3], ratios, want)
			}
			rows++
			continue
		}
		rows++
		theirs, alone, ours := v[0], v[1], v[2]
		for i, want := range []float64{ours / theirs, ours / alone, alone / theirs} {
			if d := v[3+i] - want; d > 0.006 || d < -0.006 {
				t.Errorf("round %s: ratio column %d = %v; the rates give %.3f", f[0], i+5, v[3+i], want)
			}
		}
		ratios = append(ratios, ours/theirs)
	}
	if rows != 4 {
		t.Fatalf("found %d of the 4 table rows (3 rounds and the median)", rows)
	}
	if !strings.Contains(out.String(), "ratio lockbench / redis-benchmark: ") || !strings.Contains(out.String(), "median of 3 rounds") {
		t.Errorf("no ratio line:\n%s", out.String())
	}
}
