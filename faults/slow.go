package faults

import (
	"context"
	"fmt"
	"time"

	"github.com/lockbench/lockbench/loadgen"
	"github.com/lockbench/lockbench/loadgen/store"
	"github.com/lockbench/lockbench/servers"
	"github.com/lockbench/lockbench/strategies"
)

func init() {
	register(Kind{
		Name:        "slow",
		Description: "one critical section's work outlasts the TTL, with no process pause (keepalive-based locks may survive)",
		Params:      "instance=N (default: whichever is caught first), for=D or MIN-MAX (default 1.5×TTL+1s; for etcd its lease: TTL in whole seconds, ≥ 2s), " + scheduleParams,
		AppliesTo:   hasServer,
		Adjust: func(sc loadgen.Scenario, p map[string]string) (loadgen.Scenario, error) {
			c, err := parseOutlast("slow", p)
			if err != nil {
				return sc, err
			}
			return sc, c.check("slow", sc)
		},
		New: func(p map[string]string, _ servers.Target) (loadgen.Fault, error) {
			c, err := parseOutlast("slow", p)
			if err != nil {
				return nil, err
			}
			return &slow{cfg: c}, nil
		},
	})
}

// slow makes one critical section last longer than the lock.
type slow struct {
	cfg     outlastConfig
	env     *loadgen.FaultEnv
	catcher *catcher
	dur     time.Duration // this strike's length, set before the trap is armed
}

var _ striker = (*slow)(nil)

func (s *slow) Name() string { return "slow" }

// Setup decides the section's length and sets the trap.
func (s *slow) Setup(_ context.Context, env *loadgen.FaultEnv) error {
	if err := s.cfg.check("slow", env.Scenario); err != nil {
		return err
	}
	if s.cfg.dur.isZero() {
		s.cfg.dur = fixed(outlast(env.Info, env.Scenario.TTL))
	}
	s.env = env
	s.catcher = newCatcher(env, s.cfg.wants, s.slowDown)
	s.catcher.aim(!s.cfg.sched.random)
	return nil
}

// slowDown runs inside the holder's Enter, on the coordinator: the order
// rides on that Enter's answer (FaultEnv.SlowNext), so the section slowed
// is this one, in an in-process instance, a process or on an agent alike
// (unless another worker of the instance enters in the microseconds
// between).
func (s *slow) slowDown(r store.EnterReq) {
	s.env.SlowNext(r.Instance, s.dur)
	s.env.Begin(fmt.Sprintf("instance %d's critical section made to last %s: key %s, payment %d, token %d",
		r.Instance, ms(s.dur), r.LockKey, r.Payment, r.Token))
}

// Inject strikes on the fault's schedule.
func (s *slow) Inject(ctx context.Context, env *loadgen.FaultEnv) error {
	return inject(ctx, env, s.cfg.sched, s)
}

// strike arms the trap with a drawn for= and marks the end of the slow
// section.
func (s *slow) strike(ctx context.Context, env *loadgen.FaultEnv, d *draws) error {
	s.dur = d.of(s.cfg.dur)
	if _, ok := s.catcher.catch(ctx); !ok {
		env.Event(fmt.Sprintf("slow not injected: no holder of a new payment (%s) entered %s", s.cfg.who(), s.cfg.sched.when()))
		return nil
	}
	start := time.Now()
	// The caught holder took its lock before it entered: a lease not kept
	// alive has expired one lease later.
	env.Forgot(start.Add(env.Info.LeaseTTL(env.Scenario.TTL)))
	// The section ends by itself; wait for it so the window is right. The
	// run cannot end before: stopping the instance waits for its workers.
	if strategies.Sleep(ctx, s.dur) {
		env.End(fmt.Sprintf("slow critical section over after %s", ms(time.Since(start))))
	}
	return nil
}

// Close does nothing: the slow section ends by itself.
func (s *slow) Close() error { return nil }
