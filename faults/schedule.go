package faults

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/lockbench/lockbench/loadgen"
	"github.com/lockbench/lockbench/strategies"
)

// Schedules: when a fault strikes.
const (
	// ScheduleDesigned strikes once, at the designed moment (at=SHARE of
	// the payments offered): a proof that the failure is possible. The
	// default.
	ScheduleDesigned = "designed"
	// ScheduleRandom strikes again and again at random moments over the
	// run, Jepsen's nemesis style: the waits between strikes are drawn
	// from an exponential distribution with mean every=D, so that trials
	// measure how likely a strike is to lead to an unsafe outcome.
	ScheduleRandom = "random"
	// DefaultEvery is the mean time between random strikes when every= is
	// not given: 2 seconds.
	DefaultEvery = 2 * time.Second
)

// Salts of the two random streams drawn from the run's seed: the waits
// between strikes, and each strike's durations. Two streams, so that a
// fault that draws more durations per strike than another still strikes at
// the same moments for the same seed.
const (
	saltGaps      = 0x6661756c74676170 // "faultgap"
	saltDurations = 0x6661756c74647572 // "faultdur"
)

// schedule is when a fault strikes: its schedule=, at= and every=
// parameters, which every fault takes (params.schedule).
type schedule struct {
	random bool
	at     float64       // designed: the share of the payments offered first
	every  time.Duration // random: the mean time between strikes
}

// schedule reads schedule=designed|random, then at=SHARE for the designed
// strike or every=D for random ones (each is refused as unknown with the
// other schedule, rather than silently ignored).
func (ps *params) schedule() schedule {
	var s schedule
	s.random = ps.choice("schedule", ScheduleDesigned, ScheduleRandom) == ScheduleRandom
	if s.random {
		s.every = ps.duration("every", DefaultEvery)
	} else {
		s.at = ps.share("at", DefaultAt)
	}
	return s
}

// scheduleParams documents the parameters of params.schedule, for Kind.Params.
const scheduleParams = "at=SHARE (default 0.3), schedule=designed|random (default designed), every=D (schedule=random: mean time between strikes, default 2s)"

// when says, for a strike that found nobody to catch, when it looked.
func (s schedule) when() string {
	if s.random {
		return "before the load ended"
	}
	return fmt.Sprintf("after %.0f%% of the payments", 100*s.at)
}

// striker is a fault whose strike can run many times in one run: Setup and
// Close run once, strike once per strike.
type striker interface {
	// strike strikes once, drawing its durations from d in an order that
	// does not depend on the run, marks the strike with env.Begin and
	// env.End, and returns once the strike is undone (the process
	// continued, the node started, the proxy healed), also when ctx ends.
	// A strike that finds nobody to catch records an event and returns nil.
	strike(ctx context.Context, env *loadgen.FaultEnv, d *draws) error
}

// draws are the random numbers of one run's schedule, from its seed: the
// same seed gives the same waits between strikes and the same durations.
type draws struct {
	gaps  *rand.Rand
	durs  *rand.Rand
	every time.Duration
}

// newDraws returns the draws of a run with the given seed and mean time
// between strikes.
func newDraws(seed int64, every time.Duration) *draws {
	return &draws{
		gaps:  rand.New(rand.NewPCG(uint64(seed), saltGaps)),
		durs:  rand.New(rand.NewPCG(uint64(seed), saltDurations)),
		every: every,
	}
}

// gap is the wait before the next random strike: exponential with mean
// every (the strikes of a Poisson process, counted from the end of the
// previous one).
func (d *draws) gap() time.Duration {
	return time.Duration(d.gaps.ExpFloat64() * float64(d.every))
}

// of draws a duration from s, uniformly in [lo, hi]; exactly lo for a
// single duration (which still consumes no draw, so a fixed duration does
// not shift the ones after it).
func (d *draws) of(s span) time.Duration {
	if s.hi <= s.lo {
		return s.lo
	}
	return s.lo + time.Duration(d.durs.Int64N(int64(s.hi-s.lo)+1))
}

// inject is every fault's Inject: it runs f's strike once at the designed
// moment, or, with schedule=random, again and again from the start of the
// measured run, each after a random wait counted from the end of the
// previous strike (a strike is undone before the next begins), until the
// load ends.
// MaxDesignedStrikes bounds how often a designed fault strikes in one run:
// again after each strike that missed, 5 in all.
const MaxDesignedStrikes = 5

func inject(ctx context.Context, env *loadgen.FaultEnv, s schedule, f striker) error {
	d := newDraws(env.Scenario.Seed, s.every)
	if !s.random {
		if env.WaitOffered(ctx, s.at) != nil {
			return nil
		}
		// A designed strike that missed (FaultEnv.Missed) strikes again
		// while payments are still offered, up to MaxDesignedStrikes.
		for n := 1; ; n++ {
			if err := f.strike(ctx, env, d); err != nil {
				return err
			}
			if !env.Missed() || !env.Offering() || n >= MaxDesignedStrikes || ctx.Err() != nil {
				return nil
			}
		}
	}
	// The warmup is not measured: strike only in the measured run.
	if !strategies.Sleep(ctx, -env.Since()) {
		return nil
	}
	for {
		if !strategies.Sleep(ctx, d.gap()) || !env.Offering() {
			return nil
		}
		if err := f.strike(ctx, env, d); err != nil {
			return err
		}
	}
}

// Random reports whether the spec strikes on a random schedule
// (schedule=random): its runs count many strikes.
func (s Spec) Random() bool { return s.Params["schedule"] == ScheduleRandom }
