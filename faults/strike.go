package faults

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockbench/lockbench/internal/usage"
	"github.com/lockbench/lockbench/loadgen"
	"github.com/lockbench/lockbench/loadgen/store"
	"github.com/lockbench/lockbench/servers"
	"github.com/lockbench/lockbench/strategies"
)

// strikeConfig configures restart-node and clock-jump: a fault on one Redis
// node while a holder is inside its critical section.
type strikeConfig struct {
	index int  // -1: node 0, or the middle node of a multi-node lock
	hold  span // zero: TTL/2
	split bool
	sched schedule
	jump  time.Duration // clock-jump: 0 means the lease TTL + 1s
}

const strikeParams = "node=N (default 0; for redlock the middle node, N/2), hold=D or MIN-MAX (how long the caught holder stays inside, default TTL/2), " +
	"split=on|off (multi-node locks, default on: see the package doc), " + scheduleParams

func parseStrike(name string, p map[string]string, clock bool) (strikeConfig, error) {
	ps := newParams(name, p)
	c := strikeConfig{
		index: ps.index("node", -1),
		hold:  ps.span("hold", span{}),
		split: ps.onOff("split", true),
		sched: ps.schedule(),
	}
	if clock {
		c.jump = ps.duration("jump", 0)
	}
	return c, ps.done()
}

func (c strikeConfig) check(name string, sc loadgen.Scenario) error {
	if c.hold.hi >= sc.TTL {
		return &usage.Error{Flag: "fault", Msg: fmt.Sprintf("%s: hold=%s must be shorter than the TTL (%s): the holder must still hold a valid lock when the node fails", name, c.hold, sc.TTL)}
	}
	return nil
}

// serversFaketime are the server options clock-jump needs.
var serversFaketime = servers.Options{Faketime: true}

// forgetful is AppliesTo of restart-node: strategies whose nodes come back
// empty when restarted (servers.Forgets).
func forgetful(info strategies.Info) bool { return servers.Forgets(info.Need.Backend) }

// clocked is AppliesTo of clock-jump: strategies whose nodes' clocks
// lockbench can move (servers.MovableClock).
func clocked(info strategies.Info) bool { return servers.MovableClock(info.Need.Backend) }

// strike catches a holder inside its critical section (see trap), keeps it
// there for cfg.hold, well within its lock's validity, and meanwhile makes
// one Redis node forget the lock (act): restarted empty, or its clock moved
// past the key's expiry. A contender that retries then gets the lock too.
// With split on, Redlock's majorities are arranged as the package doc says.
type strike struct {
	name string
	cfg  strikeConfig
	// act fails the node and describes what it did.
	act func(ctx context.Context, s *strike) (string, error)
	// undo, if set, puts the node back after the holder is out.
	undo func(s *strike) (string, error)
	// appliesTo is the kind's AppliesTo.
	appliesTo func(strategies.Info) bool

	env     *loadgen.FaultEnv
	target  servers.Target
	node    servers.Node
	clock   servers.Clock // clock-jump: the node's clock
	cut     []*proxy      // split: proxies of the nodes refused to the holder
	cutIdx  []int
	checks  []*redis.Client // split: direct clients of those nodes
	catcher *catcher
	hold    time.Duration // this strike's hold, set before arming

	mu     sync.Mutex
	undone bool // this strike's undo ran (or is not needed)
	acted  bool // this strike failed the node
}

var _ striker = (*strike)(nil)

func (s *strike) Name() string { return s.name }

// Setup finds the node, reroutes the split nodes through proxies and sets
// the trap.
func (s *strike) Setup(_ context.Context, env *loadgen.FaultEnv) error {
	if !s.appliesTo(env.Info) {
		return fmt.Errorf("%s does not apply to %s", s.name, env.Strategy)
	}
	if err := s.cfg.check(s.name, env.Scenario); err != nil {
		return err
	}
	s.env = env
	n := s.target.Len()
	if s.cfg.index < 0 {
		s.cfg.index = 0
		if n > 1 {
			s.cfg.index = n / 2
		}
	}
	if s.cfg.hold.isZero() {
		s.cfg.hold = fixed(env.Scenario.TTL / 2)
	}
	if s.cfg.jump == 0 {
		// Past the lease the server grants (Info.LeaseTTL), which is the
		// TTL unless the library fixes its own (rueidislock: 5s).
		s.cfg.jump = env.Info.LeaseTTL(env.Scenario.TTL) + time.Second
	}
	nd, err := serverNode(s.name, env, s.target, s.cfg.index)
	if err != nil {
		return err
	}
	s.node = nd
	if s.undo != nil { // clock-jump: the node must run under libfaketime
		clock, ok := nd.(servers.Clock)
		if !ok {
			return fmt.Errorf("%s: %s has no clock lockbench can move", s.name, nd.Name())
		}
		if err := clock.SetClockOffset(0); errors.Is(err, servers.ErrNoFaketime) {
			return fmt.Errorf("%s: %s was not started under libfaketime (lockbench does so when the fault is chosen up front: servers.Options.Faketime)", s.name, nd.Name())
		} else if err != nil {
			return fmt.Errorf("%s: %s: %w", s.name, nd.Name(), err)
		}
		s.clock = clock
	}
	var want func(store.EnterReq) bool
	if n > 1 && s.cfg.split {
		if err := s.setupSplit(n); err != nil {
			s.closeSplit()
			return err
		}
		want = s.holdsFirstQuorumOnly
	}
	s.catcher = newCatcher(env, want, s.holdHolder)
	s.catcher.aim(!s.cfg.sched.random)
	return nil
}

// holdHolder runs inside the caught holder's Enter: it keeps the holder in
// its critical section for the strike's hold, by slowing that section (an
// in-process instance: FaultEnv.SlowNext) or by stopping its process
// (resumed by Inject).
func (s *strike) holdHolder(r store.EnterReq) {
	how, _ := s.catcher.keep(r, s.hold)
	what := fmt.Sprintf("holder caught inside its critical section (%s for %s, within its lock's validity): instance %d, key %s, payment %d, token %d",
		how, ms(s.hold), r.Instance, r.LockKey, r.Payment, r.Token)
	if len(s.cut) > 0 {
		s.env.Event(what)
	} else {
		s.env.Begin(what)
	}
}

// Inject strikes on the fault's schedule.
func (s *strike) Inject(ctx context.Context, env *loadgen.FaultEnv) error {
	s.catcher.see(env.Instances)
	return inject(ctx, env, s.cfg.sched, s)
}

// strike catches a holder, fails the node while the holder is inside for
// a drawn hold=, and puts everything back.
func (s *strike) strike(ctx context.Context, env *loadgen.FaultEnv, d *draws) error {
	s.hold = d.of(s.cfg.hold)
	s.mu.Lock()
	s.acted, s.undone = false, false
	s.mu.Unlock()
	if len(s.cut) > 0 {
		for _, p := range s.cut {
			p.refuse()
		}
		env.Begin(fmt.Sprintf("%s refused to every instance: a lock taken now holds the first quorum only", s.cutNames()))
	}
	if _, ok := s.catcher.catch(ctx); !ok {
		err := s.heal()
		what := fmt.Sprintf("%s not injected: no holder of a new payment entered %s", s.name, s.cfg.sched.when())
		if len(s.cut) > 0 && !s.cfg.sched.random {
			env.EndMissed(what) // begun with the refusal: a designed strike that caught nobody
		} else {
			env.End(what)
		}
		return err
	}
	caught := time.Now()
	// Heal first: while the node is down a contender must see the other
	// nodes answer "taken" (and retry), not fail (and give up).
	if len(s.cut) > 0 {
		if err := s.heal(); err != nil {
			return err
		}
		env.Event(s.cutNames() + " reachable again")
	}
	what, err := s.act(ctx, s)
	if err != nil {
		return errors.Join(fmt.Errorf("%s %s: %w", s.name, s.node.Name(), err), s.catcher.letGo())
	}
	s.mu.Lock()
	s.acted = true
	s.mu.Unlock()
	env.Forgot(time.Now())
	env.Event(what)
	strategies.Sleep(ctx, s.hold-time.Since(caught))
	if err := s.catcher.letGo(); err != nil {
		return err
	}
	env.End("holder's critical section over")
	if s.undo != nil {
		what, err := s.doUndo()
		if err != nil {
			return err
		}
		if what != "" {
			env.Event(what)
		}
	}
	return nil
}

func (s *strike) doUndo() (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.undone || !s.acted || s.undo == nil {
		return "", nil
	}
	s.undone = true
	return s.undo(s)
}

// Close puts back whatever Inject could not.
func (s *strike) Close() error {
	err := s.catcher.letGo()
	_, uerr := s.doUndo()
	s.closeSplit()
	return errors.Join(err, uerr)
}

// restartNode kills the node and starts it again at once: without
// persistence it comes back empty.
func restartNode(ctx context.Context, s *strike) (string, error) {
	start := time.Now()
	if err := s.node.Kill(); err != nil {
		return "", err
	}
	uctx, cancel := undoCtx(ctx)
	defer cancel()
	if err := s.node.Start(uctx); err != nil {
		return "", err
	}
	return fmt.Sprintf("%s restarted in %s, empty (no persistence): it forgot the lock", s.node.Name(), ms(time.Since(start))), nil
}

// jumpClock moves the node's clock forward past the lock's expiry.
func jumpClock(_ context.Context, s *strike) (string, error) {
	if err := s.clock.SetClockOffset(s.cfg.jump); err != nil {
		return "", err
	}
	return fmt.Sprintf("%s's clock jumped forward %s: its copy of the lock expired", s.node.Name(), ms(s.cfg.jump)), nil
}

// resetClock sets the node's clock back to real time. Keys written in the
// meantime then live up to cfg.jump longer there, which delays their expiry
// and never shortens it.
func resetClock(s *strike) (string, error) {
	if err := s.clock.SetClockOffset(0); err != nil {
		return "", err
	}
	return s.node.Name() + "'s clock set back to real time", nil
}

func init() {
	register(Kind{
		Name:        "restart-node",
		Description: "while a holder is inside its critical section, restart one Redis node (or the NATS server) without persistence: it comes back empty and forgets the lock (NATS: the stream, its duplicate window and consumers)",
		Params:      strikeParams,
		AppliesTo:   forgetful,
		NeedsLocal:  true,
		Adjust: func(sc loadgen.Scenario, p map[string]string) (loadgen.Scenario, error) {
			c, err := parseStrike("restart-node", p, false)
			if err != nil {
				return sc, err
			}
			return sc, c.check("restart-node", sc)
		},
		New: func(p map[string]string, target servers.Target) (loadgen.Fault, error) {
			c, err := parseStrike("restart-node", p, false)
			if err != nil {
				return nil, err
			}
			return &strike{name: "restart-node", cfg: c, act: restartNode, appliesTo: forgetful, target: target}, nil
		},
	})
	register(Kind{
		Name: "clock-jump",
		Description: "while a holder is inside its critical section, one Redis node's clock (libfaketime) jumps forward past the TTL, " +
			"so its copy of the lock expires early; set back at the end",
		Params:     strikeParams + ", jump=D (default the lease's TTL + 1s: the TTL, or the lease the library fixes)",
		AppliesTo:  clocked,
		NeedsLocal: true,
		Adjust: func(sc loadgen.Scenario, p map[string]string) (loadgen.Scenario, error) {
			c, err := parseStrike("clock-jump", p, true)
			if err != nil {
				return sc, err
			}
			return sc, c.check("clock-jump", sc)
		},
		Options: serversFaketime,
		New: func(p map[string]string, target servers.Target) (loadgen.Fault, error) {
			c, err := parseStrike("clock-jump", p, true)
			if err != nil {
				return nil, err
			}
			return &strike{name: "clock-jump", cfg: c, act: jumpClock, undo: resetClock, appliesTo: clocked, target: target}, nil
		},
	})
}
