package selfcheck

import (
	"bytes"
	"context"
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// compareTable checks the table a comparison printed: the warm-up row,
// rounds 1..rounds, then the median; each with three rates, three ratios
// that agree with the rates, three CPU times per cycle, the harness's
// share (lockbench's less the bare client's) and the machine's steal
// percentage ("-" where /proc/stat is unreadable). It returns the counted
// rounds' lockbench/bare ratios.
func compareTable(t *testing.T, out string, rounds int) []float64 {
	t.Helper()
	var vsBare []float64
	rows := 0
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) != 12 || (f[0] != "median" && f[0] != "warm-up" && f[0] != strconv.Itoa(rows+1)) {
			continue
		}
		if st := f[11]; st != "-" {
			if x, err := strconv.ParseFloat(st, 64); err != nil || x < 0 || x > 100 {
				t.Errorf("row %q: steal %q; want a percentage or -", line, st)
			}
		}
		var v [10]float64
		for i := range v {
			x, err := strconv.ParseFloat(f[i+1], 64)
			if err != nil || (i < 9 && x <= 0) {
				t.Fatalf("row %q: column %d = %q; want a positive number", line, i+2, f[i+1])
			}
			v[i] = x
		}
		switch f[0] {
		case "warm-up":
			if rows != 0 {
				t.Errorf("the warm-up round came after round %d", rows)
			}
			continue
		case "median":
			if rows != rounds {
				t.Fatalf("median after %d rounds; want %d", rows, rounds)
			}
			if want := median(vsBare); math.Abs(v[4]-want) > 0.006 {
				t.Errorf("median lockbench/bare = %v; want the median of the rounds' %v = %.2f", v[4], vsBare, want)
			}
			rows++
			continue
		}
		rows++
		native, bare, ours := v[0], v[1], v[2]
		for i, want := range []float64{ours / native, ours / bare, bare / native} {
			if d := v[3+i] - want; math.Abs(d) > 0.006 {
				t.Errorf("round %s: ratio column %d = %v; the rates give %.3f", f[0], i+5, v[3+i], want)
			}
		}
		if d := v[9] - (v[8] - v[7]); math.Abs(d) > 0.11 {
			t.Errorf("round %s: harness cpu %v; want lockbench's %v less the bare client's %v", f[0], v[9], v[8], v[7])
		}
		vsBare = append(vsBare, ours/bare)
	}
	if rows != rounds+1 {
		t.Fatalf("found %d of the %d table rows (%d rounds and the median)", rows, rounds+1, rounds)
	}
	return vsBare
}

// The closing lines of a comparison: the ratios' medians and ranges over
// the counted rounds, the target, the CPU medians, and --fail-below's
// verdict on the median ratio to the bare client.
func TestComparisonClosingLines(t *testing.T) {
	rounds := [][3]cycleRate{
		{{1000, 10 * time.Microsecond}, {900, 20 * time.Microsecond}, {880, 21 * time.Microsecond}}, // warm-up
		{{1000, 10 * time.Microsecond}, {800, 20 * time.Microsecond}, {760, 21 * time.Microsecond}},
		{{1000, 10 * time.Microsecond}, {800, 20 * time.Microsecond}, {800, 20 * time.Microsecond}},
		{{1000, 10 * time.Microsecond}, {800, 20 * time.Microsecond}, {720, 22 * time.Microsecond}},
	}
	for _, tc := range []struct {
		failBelow float64
		wantErr   bool
	}{
		{0, false},    // off
		{0.95, false}, // the median is exactly 0.95
		{0.96, true},
	} {
		c := comparison{
			name: "test", native: "tool", bare: "client alone", ours: "lockbench x",
			nativeShort: "tool", bareShort: "client", bareWhy: "why", rounds: 3, failBelow: tc.failBelow,
		}
		r := -1 // the round under way: the native tool runs first in each
		c.measure[0] = func() (cycleRate, error) { r++; return rounds[r][0], nil }
		c.measure[1] = func() (cycleRate, error) { return rounds[r][1], nil }
		c.measure[2] = func() (cycleRate, error) { return rounds[r][2], nil }
		var out bytes.Buffer
		err := c.run(context.Background(), &out, &bytes.Buffer{})
		if got := errors.Is(err, ErrBelowTarget); got != tc.wantErr {
			t.Errorf("--fail-below %v: err %v; want ErrBelowTarget %v", tc.failBelow, err, tc.wantErr)
		}
		compareTable(t, out.String(), 3)
		for _, want := range []string{
			"ratio lockbench / tool:         0.76 (median of 3 rounds, range 0.72–0.80)\n",
			"ratio lockbench / client alone: 0.95 (median of 3 rounds, range 0.90–1.00; the harness's own cost; target ≥ 0.95)\n",
			"ratio client / tool:            0.80 (why)\n",
			"cpu per cycle (medians): tool 10.0 µs, client alone 20.0 µs, lockbench 21.0 µs; the harness +1.0 µs, lockbench / client alone 1.05 (target ≤ 1.05)\n",
		} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("no %q in:\n%s", want, out.String())
			}
		}
	}
}

// A round runs the native tool first, then the bare client and lockbench
// in turn, lockbench first in the odd rounds, so that a drift within a
// round (a table growing, a neighbour's load) does not always favour the
// same one of the two whose ratio is the result; each measurement comes
// after the server was settled (FLUSHDB, VACUUM), so that none pays for
// what the one before it left.
func TestComparisonRoundOrder(t *testing.T) {
	var got []string
	c := comparison{name: "test", native: "tool", bare: "client alone", ours: "lockbench x",
		nativeShort: "tool", bareShort: "client", bareWhy: "why", rounds: 4,
		settle: func() error { got = append(got, "settle"); return nil }}
	for i, name := range []string{"native", "bare", "ours"} {
		c.measure[i] = func() (cycleRate, error) {
			got = append(got, name)
			return cycleRate{perSec: float64(100 * (i + 1)), cpu: time.Microsecond}, nil
		}
	}
	if err := c.run(context.Background(), &bytes.Buffer{}, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, order := range [][]string{
		{"native", "bare", "ours"}, // warm-up (round 0)
		{"native", "ours", "bare"}, // round 1
		{"native", "bare", "ours"},
		{"native", "ours", "bare"},
		{"native", "bare", "ours"},
	} {
		for _, m := range order {
			want = append(want, "settle", m) // each measurement after a settle
		}
	}
	want = want[1:] // but the first: there is nothing to settle yet
	if !slices.Equal(got, want) {
		t.Errorf("measurements ran in the order %v; want %v", got, want)
	}
}

// A settle that fails ends the comparison with its error before the
// measurement it was to prepare.
func TestComparisonSettleError(t *testing.T) {
	errSettle := errors.New("settle failed")
	ran := 0
	c := comparison{name: "test", native: "tool", bare: "client alone", ours: "lockbench x",
		nativeShort: "tool", bareShort: "client", bareWhy: "why", rounds: 1,
		settle: func() error { return errSettle }}
	for i := range c.measure {
		c.measure[i] = func() (cycleRate, error) { ran++; return cycleRate{perSec: 1, cpu: 1}, nil }
	}
	if err := c.run(context.Background(), &bytes.Buffer{}, &bytes.Buffer{}); !errors.Is(err, errSettle) {
		t.Errorf("run: %v; want the settle's error", err)
	}
	if ran != 1 {
		t.Errorf("%d measurements ran; want only the first, which needs no settle", ran)
	}
}

// The ratios of the quiet rounds: those whose steal was read and was
// under quietSteal.
func TestQuietRatios(t *testing.T) {
	ratios := []float64{0.9, 1.2, 0.8, 1.1}
	steals := []float64{1, 12, 4.9, math.NaN()} // quiet, stolen, quiet, unknown
	if got, want := quietRatios(ratios, steals), []float64{0.9, 0.8}; !slices.Equal(got, want) {
		t.Errorf("quietRatios = %v; want %v", got, want)
	}
}

// With rounds enough (8 and up), a ratio's closing line gives the
// median's 95% interval before the range; with fewer, the interval would
// be the range, and only the range is given.
func TestCompareSpread(t *testing.T) {
	var forty []float64
	for i := range 40 {
		forty = append(forty, 0.80+0.01*float64(i)) // 0.80 … 1.19
	}
	for _, tc := range []struct {
		xs   []float64
		want string
	}{
		{[]float64{0.90, 1.00, 0.95}, "range 0.90–1.00"},
		{[]float64{0.9, 0.91, 0.92, 0.93, 0.94, 0.95, 0.96}, "range 0.90–0.96"},
		// 8: order statistics 1 and 7 (96.1%), the narrower of the two.
		{[]float64{0.9, 0.91, 0.92, 0.93, 0.94, 0.95, 0.96, 0.99}, "95% CI 0.90–0.96, range 0.90–0.99"},
		// Order statistics 14 and 27 of 40 (96.2%).
		{forty, "95% CI 0.93–1.06, range 0.80–1.19"},
	} {
		if got := spread(tc.xs); got != tc.want {
			t.Errorf("spread(%v) = %q; want %q", tc.xs, got, tc.want)
		}
	}
}
