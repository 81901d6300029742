package faults

import (
	"testing"
	"time"
)

// strikePlan is what a random schedule would do with seed: n waits between
// strikes and, for each strike, a duration drawn from s.
func strikePlan(seed int64, every time.Duration, s span, n int) (gaps, durs []time.Duration) {
	d := newDraws(seed, every)
	for range n {
		gaps = append(gaps, d.gap())
		durs = append(durs, d.of(s))
	}
	return gaps, durs
}

// A random schedule is reproducible from the run's seed: the same seed
// gives the same waits and durations, another seed others; the waits
// average every, and the durations stay in their range.
func TestScheduleDraws(t *testing.T) {
	const n = 2000
	every := time.Second
	s := span{300 * time.Millisecond, 800 * time.Millisecond}
	g1, d1 := strikePlan(7, every, s, n)
	g2, d2 := strikePlan(7, every, s, n)
	g3, _ := strikePlan(8, every, s, n)
	var sum time.Duration
	same := 0
	for i := range n {
		if g1[i] != g2[i] || d1[i] != d2[i] {
			t.Fatalf("strike %d: seed 7 drew wait %s, for %s, then wait %s, for %s; want the same twice", i, g1[i], d1[i], g2[i], d2[i])
		}
		if g1[i] == g3[i] {
			same++
		}
		if d1[i] < s.lo || d1[i] > s.hi {
			t.Errorf("strike %d: duration %s; want within %s", i, d1[i], s)
		}
		sum += g1[i]
	}
	if same > n/100 {
		t.Errorf("seeds 7 and 8 drew %d equal waits of %d; want different schedules", same, n)
	}
	// The mean of 2000 exponential draws is within 10% of every (its
	// standard error is every/√2000, about 2%).
	if mean := sum / n; mean < every*9/10 || mean > every*11/10 {
		t.Errorf("mean wait %s; want about every=%s", mean, every)
	}
}

// A fixed duration is the duration itself, and draws nothing: the
// durations after it are the same as without it.
func TestScheduleFixedSpan(t *testing.T) {
	d := newDraws(1, time.Second)
	if got := d.of(fixed(2 * time.Second)); got != 2*time.Second {
		t.Errorf("of(2s) = %s; want 2s", got)
	}
	r := span{time.Second, 2 * time.Second}
	a, b := newDraws(1, time.Second), newDraws(1, time.Second)
	a.of(fixed(time.Second))
	if x, y := a.of(r), b.of(r); x != y {
		t.Errorf("a range drew %s after a fixed duration and %s without; want the same", x, y)
	}
}
