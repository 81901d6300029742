package faults

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lockbench/lockbench/loadgen"
	"github.com/lockbench/lockbench/loadgen/store"
	"github.com/lockbench/lockbench/servers"
)

func init() {
	register(Kind{
		Name: "slow",
		Description: "one critical section's work outlasts the TTL, with no process pause (keepalive-based locks may survive); " +
			"runs the instances as goroutines",
		Params:    "instance=N (default: whichever is caught first), for=D (default 1.5×TTL+1s; for etcd its lease: TTL in whole seconds, ≥ 2s), at=SHARE (default 0.3)",
		AppliesTo: hasServer,
		Adjust: func(sc loadgen.Scenario, p map[string]string) (loadgen.Scenario, error) {
			c, err := parseOutlast("slow", p)
			if err != nil {
				return sc, err
			}
			if err := c.check("slow", sc); err != nil {
				return sc, err
			}
			// The fault slows the critical section it catches from inside
			// the holder's own Enter, which only an in-process instance
			// runs; an instance process would get the order too late.
			sc.InstanceMode = "goroutine"
			return sc, nil
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
	trap    *trap
	handles []loadgen.InstanceHandle // copied by Inject before the trap is armed
}

func (s *slow) Name() string { return "slow" }

// Setup decides the section's length and sets the trap.
func (s *slow) Setup(_ context.Context, env *loadgen.FaultEnv) error {
	if err := s.cfg.check("slow", env.Scenario); err != nil {
		return err
	}
	if env.Scenario.InstanceMode != "goroutine" {
		return errors.New("slow needs in-process instances (--instance-mode goroutine)")
	}
	if s.cfg.dur == 0 {
		s.cfg.dur = outlast(env.Info, env.Scenario.TTL)
	}
	s.env = env
	s.trap = newTrap(env, s.cfg.wants, s.slowDown)
	return nil
}

// slowDown runs in the holder's own goroutine, inside its Enter: the
// instance's next critical section, which Slow sets, is this one (unless
// another worker of the instance enters in the microseconds between).
func (s *slow) slowDown(r store.EnterReq) {
	sl, ok := s.handles[r.Instance].(loadgen.Slower)
	if !ok {
		s.env.Event(fmt.Sprintf("could not slow instance %d: it is not in-process", r.Instance))
		return
	}
	sl.Slow(s.cfg.dur)
	s.env.Begin(fmt.Sprintf("instance %d's critical section made to last %s: key %s, payment %d, token %d",
		r.Instance, ms(s.cfg.dur), r.LockKey, r.Payment, r.Token))
}

// Inject waits for the run to reach cfg.at, arms the trap and marks the end
// of the slow section.
func (s *slow) Inject(ctx context.Context, env *loadgen.FaultEnv) error {
	s.handles = append([]loadgen.InstanceHandle(nil), env.Instances...)
	if env.WaitOffered(ctx, s.cfg.at) != nil {
		return nil
	}
	s.trap.arm()
	if _, ok := s.trap.wait(ctx); !ok {
		env.Event(fmt.Sprintf("slow not injected: no holder of a new payment (%s) entered after %.0f%% of the payments", s.cfg.who(), 100*s.cfg.at))
		return nil
	}
	start := time.Now()
	// The section ends by itself; wait for it so the window is right. The
	// run cannot end before: stopping the instance waits for its workers.
	if sleep(ctx, s.cfg.dur) {
		env.End(fmt.Sprintf("slow critical section over after %s", ms(time.Since(start))))
	}
	return nil
}

// Close does nothing: the slow section ends by itself.
func (s *slow) Close() error { return nil }
