package check

import (
	"math"
	"slices"
)

// unsafeStrikes counts the strikes during whose window an unsafe outcome
// happened (docs/history.md, "unsafe_strikes"). A window runs from the
// strike's start to its close, half-open, so that an outcome at the very
// instant one window closes and the next opens is held against the next
// strike only; a strike with no close (0) is open to the end of the run.
func unsafeStrikes(strikes []strike, outcomes []int64) int64 {
	slices.Sort(outcomes)
	var n int64
	for _, s := range strikes {
		end := s.close
		if end == 0 {
			end = math.MaxInt64
		}
		j, _ := slices.BinarySearch(outcomes, s.start)
		if j < len(outcomes) && outcomes[j] < end {
			n++
		}
	}
	return n
}
