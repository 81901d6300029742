package check

import (
	"math"
	"slices"
	"time"
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
		if strikeUnsafe(s, outcomes) {
			n++
		}
	}
	return n
}

// strikeUnsafe reports whether an unsafe outcome (outcomes, sorted)
// happened in s's window.
func strikeUnsafe(s strike, outcomes []int64) bool {
	end := s.close
	if end == 0 {
		end = math.MaxInt64
	}
	j, _ := slices.BinarySearch(outcomes, s.start)
	return j < len(outcomes) && outcomes[j] < end
}

// askSpan is loadgen.AskSpan, in ns: how long another holder must have
// waited on a forgotten lock for a strike to have landed without an
// answer.
const askSpan = int64(250 * time.Millisecond)

// missedStrikes counts the designed strikes that missed
// (docs/history.md, "strike"), among those during whose window no unsafe
// outcome happened: a strike with forgot set where no acquire of its key
// by another holder (by none of its instance's workers, when the holder's
// process was stopped) was granted from caught to end, answered (ok or
// not_acquired) from forgot to end, or waited there for askSpan (or all of
// it, if shorter); and a strike without forgot whose line says missed (it
// caught nobody).
func missedStrikes(strikes []strike, outcomes []int64, asks map[string][]askLine) int64 {
	slices.Sort(outcomes)
	var n int64
	for _, s := range strikes {
		if strikeUnsafe(s, outcomes) {
			continue
		}
		if s.forgot == 0 {
			if s.missed {
				n++
			}
			continue
		}
		caught := s.caught
		if caught == 0 {
			caught = s.forgot // a line written before caught was
		}
		landed := false
		for _, a := range asks[s.k] {
			holder := a.i == s.i && (s.stopped || a.w == s.w)
			if !holder && askLanded(a.inv, a.ret, a.answered, a.ok, caught, s.forgot, s.end) {
				landed = true
				break
			}
		}
		if !landed {
			n++
		}
	}
	return n
}

// askLanded is loadgen's rule for one acquire from start to end (Unix
// ns), granted (ok), refused (answered) or neither, with the holder caught
// at caught and its lock forgotten from from until out.
func askLanded(start, end int64, answered, ok bool, caught, from, out int64) bool {
	if end <= out && ok && end >= caught {
		return true
	}
	if out <= from {
		return false
	}
	if end <= out && answered && end >= from {
		return true
	}
	end = min(end, out)
	start = max(start, from)
	return end-start >= min(askSpan, out-from)
}
