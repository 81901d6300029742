package faults

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lockbench/lockbench/internal/usage"
	"github.com/lockbench/lockbench/loadgen"
	"github.com/lockbench/lockbench/loadgen/store"
	"github.com/lockbench/lockbench/servers"
	"github.com/lockbench/lockbench/strategies"
)

func init() {
	register(Kind{
		Name: "pause",
		Description: "SIGSTOP one instance process inside a critical section for longer than the TTL, then SIGCONT " +
			"(a GC pause: the holder's lock expires, another takes it, and the holder writes when it resumes); runs the instances as processes",
		Params:    "instance=N (default: whichever is caught first), for=D or MIN-MAX (default 1.5×TTL+1s; for etcd its lease: TTL in whole seconds, ≥ 2s), " + scheduleParams,
		AppliesTo: hasServer,
		Adjust: func(sc loadgen.Scenario, p map[string]string) (loadgen.Scenario, error) {
			c, err := parseOutlast("pause", p)
			if err != nil {
				return sc, err
			}
			if err := c.check("pause", sc); err != nil {
				return sc, err
			}
			sc.InstanceMode = loadgen.InstanceProcess
			return sc, nil
		},
		New: func(p map[string]string, _ servers.Target) (loadgen.Fault, error) {
			c, err := parseOutlast("pause", p)
			if err != nil {
				return nil, err
			}
			return &pause{cfg: c}, nil
		},
	})
}

// hasServer is AppliesTo for faults that act on a lock server or on a lock's
// expiry: every strategy with a server (nolock and mutex have neither).
func hasServer(info strategies.Info) bool { return info.Need.Backend != strategies.BackendNone }

// outlastConfig is the configuration of pause and slow: one instance's
// critical section outlasts the lock.
type outlastConfig struct {
	instance int  // -1: any instance
	dur      span // zero: outlast(strategy, TTL), decided at Setup
	sched    schedule
}

func parseOutlast(name string, p map[string]string) (outlastConfig, error) {
	ps := newParams(name, p)
	c := outlastConfig{
		instance: ps.index("instance", -1),
		dur:      ps.span("for", span{}),
		sched:    ps.schedule(),
	}
	return c, ps.done()
}

// wants reports whether the trap may catch a holder of instance i.
func (c outlastConfig) wants(r store.EnterReq) bool {
	return c.instance < 0 || r.Instance == c.instance
}

// who names the instance(s) the trap waits for.
func (c outlastConfig) who() string {
	if c.instance < 0 {
		return "any instance"
	}
	return fmt.Sprintf("instance %d", c.instance)
}

// check validates c against the scenario.
func (c outlastConfig) check(name string, sc loadgen.Scenario) error {
	if c.instance >= sc.Instances {
		return &usage.Error{Flag: "fault", Msg: fmt.Sprintf("%s: instance=%d but the run has %d instance(s) (0..%d)", name, c.instance, sc.Instances, sc.Instances-1)}
	}
	if !c.dur.isZero() && c.dur.lo <= sc.TTL {
		return &usage.Error{Flag: "fault", Msg: fmt.Sprintf("%s: for=%s must exceed the TTL (%s), or the lock never expires under the holder", name, c.dur, sc.TTL)}
	}
	return nil
}

// pause stops one instance process inside a critical section.
type pause struct {
	cfg     outlastConfig
	env     *loadgen.FaultEnv
	catcher *catcher
}

var _ striker = (*pause)(nil)

func (p *pause) Name() string { return "pause" }

// Setup decides the pause's length and sets the trap.
func (p *pause) Setup(_ context.Context, env *loadgen.FaultEnv) error {
	if err := p.cfg.check("pause", env.Scenario); err != nil {
		return err
	}
	if env.Scenario.InstanceMode != loadgen.InstanceProcess {
		return errors.New("pause needs instance processes (--instance-mode process)")
	}
	if p.cfg.dur.isZero() {
		p.cfg.dur = fixed(outlast(env.Info, env.Scenario.TTL))
	}
	p.env = env
	p.catcher = newCatcher(env, p.cfg.wants, p.stop)
	p.catcher.aim(!p.cfg.sched.random)
	return nil
}

// stop runs inside the holder's Enter, before the store answers it: the
// holder's process stops while it waits for what it reads, so it is
// certainly inside its critical section, and reads (once continued) what
// the store had before anyone else could take the lock.
func (p *pause) stop(r store.EnterReq) {
	proc, err := p.catcher.stop(r) // a Pauser: checked by Inject
	if err != nil {
		p.env.Event(fmt.Sprintf("could not stop instance %d (%s): %v", r.Instance, proc.Process(), err))
		return
	}
	p.env.Begin(fmt.Sprintf("instance %d (%s) stopped inside its critical section: key %s, payment %d, token %d",
		r.Instance, proc.Process(), r.LockKey, r.Payment, r.Token))
}

// Inject strikes on the fault's schedule.
func (p *pause) Inject(ctx context.Context, env *loadgen.FaultEnv) error {
	for i, h := range env.Instances {
		if _, ok := h.(loadgen.Pauser); !ok {
			return fmt.Errorf("pause: instance %d is not a process", i)
		}
	}
	p.catcher.see(env.Instances)
	return inject(ctx, env, p.cfg.sched, p)
}

// strike arms the trap and keeps the caught process stopped for a drawn
// for= (or until ctx ends).
func (p *pause) strike(ctx context.Context, env *loadgen.FaultEnv, d *draws) error {
	dur := d.of(p.cfg.dur)
	r, ok := p.catcher.catch(ctx)
	if !ok {
		env.Event(fmt.Sprintf("pause not injected: no holder of a new payment (%s) entered %s", p.cfg.who(), p.cfg.sched.when()))
		return nil
	}
	start := time.Now()
	// The stopped holder's lease, not kept alive, has expired one lease
	// later.
	env.Forgot(start.Add(env.Info.LeaseTTL(env.Scenario.TTL)))
	strategies.Sleep(ctx, dur)
	proc, err := p.catcher.resume()
	if err != nil {
		return fmt.Errorf("resume instance %d (%s): %w", r.Instance, proc.Process(), err)
	}
	if proc != nil {
		env.End(fmt.Sprintf("instance %d (%s) resumed after %s", r.Instance, proc.Process(), ms(time.Since(start))))
	}
	return nil
}

// Close continues the process if Inject could not.
func (p *pause) Close() error { return p.catcher.letGo() }
