package loadgen

import "time"

// Pacer hands out the intended start time of each payment (vegeta's Pacer,
// wrk2's schedule). Latency is measured from these times, not from when the
// generator got round to a payment, so a stall shows up in the tail instead of
// being hidden (coordinated omission).
type Pacer interface {
	// Intended returns when payment i should start, relative to the start
	// of the run; ok is false in a closed loop, where a payment starts when
	// an instance is free.
	Intended(i int) (at time.Duration, ok bool)
}

// ConstantPacer paces payments at a fixed rate per second.
type ConstantPacer struct{ Rate float64 }

// Intended returns i/Rate seconds.
func (p ConstantPacer) Intended(i int) (time.Duration, bool) {
	return time.Duration(float64(i) / p.Rate * float64(time.Second)), true
}

// ClosedPacer is the closed loop (--rate 0): no schedule.
type ClosedPacer struct{}

// Intended reports no schedule.
func (ClosedPacer) Intended(int) (time.Duration, bool) { return 0, false }

// NewPacer returns the pacer for rate payments/s (0: closed loop).
func NewPacer(rate float64) Pacer {
	if rate <= 0 {
		return ClosedPacer{}
	}
	return ConstantPacer{Rate: rate}
}
