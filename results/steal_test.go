package results

import (
	"math"
	"testing"
	"time"
)

// The share of the machine's CPU time stolen between two readings of
// /proc/stat, in percent; unknown (NaN) when a reading failed or no time
// passed.
func TestStealPercent(t *testing.T) {
	for _, tc := range []struct {
		a, b MachineTime
		want float64 // NaN: unknown
	}{
		{MachineTime{steal: 1, total: 100, known: true}, MachineTime{steal: 6, total: 200, known: true}, 5},          // 5 of 100 s
		{MachineTime{steal: 1, total: 100, known: true}, MachineTime{steal: 1, total: 150, known: true}, 0},          // none stolen
		{MachineTime{steal: 1, total: 100, known: true}, MachineTime{steal: 0, total: 150, known: true}, 0},          // a counter that went back
		{MachineTime{steal: 1, total: 100, known: true}, MachineTime{steal: 1, total: 100, known: true}, math.NaN()}, // no time passed
		{MachineTime{}, MachineTime{steal: 1, total: 100, known: true}, math.NaN()},                                  // unreadable
	} {
		got := StealPercent(tc.a, tc.b)
		if math.IsNaN(tc.want) != math.IsNaN(got) || !math.IsNaN(got) && math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("StealPercent(%+v, %+v) = %v; want %v", tc.a, tc.b, got, tc.want)
		}
	}
	// This machine's /proc/stat reads, and a reading a moment later gives
	// a percentage.
	a := ReadMachineTime()
	if !a.known {
		t.Skip("/proc/stat unreadable here")
	}
	time.Sleep(20 * time.Millisecond)
	if p := StealPercent(a, ReadMachineTime()); !(p >= 0 && p <= 100) {
		t.Errorf("steal over 20 ms: %v; want a percentage", p)
	}
}
