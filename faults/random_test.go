package faults_test

import (
	"strings"
	"testing"
)

// randomPayments is 6 seconds of load at the tests' 100 payments a second.
const randomPayments = 600

// A random schedule strikes again and again in one run: pause, with a mean
// of 1s between strikes and each pause just past the TTL, strikes several
// times in 6 seconds, and every strike is judged. Unfenced setnx loses
// safety under some of them.
func TestRandomPause(t *testing.T) {
	r := run(t, "setnx", "pause:schedule=random,every=1s,for=1200ms-1500ms", small(randomPayments, false))
	struck(t, r)
	s := r.Summary
	t.Logf("strikes %d, unsafe strikes %d", s.Strikes, s.UnsafeStrikes)
	if s.Strikes < 2 {
		t.Errorf("strikes %d; want several in one run", s.Strikes)
	}
	if s.UnsafeStrikes == 0 || s.UnsafeStrikes > s.Strikes {
		t.Errorf("unsafe strikes %d of %d; want some, and no more than the strikes", s.UnsafeStrikes, s.Strikes)
	}
	if !s.Unsafe {
		t.Errorf("unsafe %v; want unsafe", s.Unsafe)
	}
}

// kill-node on a random schedule kills the node and starts it again at
// every strike, each down for a drawn time. The draws come from the seed:
// seed 3's first waits (2.0s, 1.6s, 0s, then 7.5s at every=2s) give three
// strikes in the 6 seconds, where seed 1's (0.9s, then 6.1s) give one.
func TestRandomKillNode(t *testing.T) {
	sc := small(randomPayments, false)
	sc.Seed = 3
	r := run(t, "setnx", "kill-node:schedule=random,every=2s,down=300ms-800ms", sc)
	struck(t, r)
	s := r.Summary
	var killed, revived int64
	for _, e := range s.FaultEvents {
		switch {
		case strings.HasSuffix(e.What, " killed"):
			killed++
		case strings.Contains(e.What, " started again"):
			revived++
		}
	}
	t.Logf("strikes %d, unsafe strikes %d, killed %d, started again %d", s.Strikes, s.UnsafeStrikes, killed, revived)
	if s.Strikes < 2 || killed != s.Strikes || revived != s.Strikes {
		t.Errorf("strikes %d, kills %d, restarts %d; want several strikes, each a kill and a restart", s.Strikes, killed, revived)
	}
	if s.UnsafeStrikes > s.Strikes {
		t.Errorf("unsafe strikes %d > strikes %d", s.UnsafeStrikes, s.Strikes)
	}
}
