package faults

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/lockbench/lockbench/internal/usage"
	"github.com/lockbench/lockbench/loadgen"
	"github.com/lockbench/lockbench/loadgen/store"
	"github.com/lockbench/lockbench/servers"
	"github.com/lockbench/lockbench/strategies"
)

// Partition defaults.
const (
	// DefaultPartitionFor is how long partition lasts: 3 seconds. With
	// mode=reset, for= is how long new connections are refused after the
	// reset, and its default is 0: accepted again at once.
	DefaultPartitionFor = 3 * time.Second
	// DefaultDelay is what mode=delay adds to every reply: 200ms.
	DefaultDelay = 200 * time.Millisecond
)

const partitionParams = "node=N (default 0), mode=cut|delay|reset (default cut), delay=D (default 200ms, per reply), " +
	"for=D or MIN-MAX (default 3s; with mode=reset how long new connections are refused after the reset, default 0: none), " +
	"hold=D or MIN-MAX (mode=reset only: how long the caught holder stays inside its critical section, default TTL/2 + for), " + scheduleParams

func init() {
	register(Kind{
		Name: "partition",
		Description: "route the instances' traffic to one server through a TCP proxy (toxiproxy, in process) and cut it off " +
			"(every byte dropped both ways), delay it for a while, or reset every connection (TCP RST) while a holder is inside " +
			"its critical section, as a load balancer or a failover does; works with given servers too",
		Params:    partitionParams,
		AppliesTo: hasServer,
		Adjust: func(sc loadgen.Scenario, p map[string]string) (loadgen.Scenario, error) {
			_, err := parsePartition(p)
			return sc, err
		},
		New: func(p map[string]string, target servers.Target) (loadgen.Fault, error) {
			c, err := parsePartition(p)
			if err != nil {
				return nil, err
			}
			return &partition{cfg: c, target: target}, nil
		},
	})
}

// partitionConfig is partition's parameters.
type partitionConfig struct {
	index int
	mode  string
	delay time.Duration
	dur   span // cut, delay: how long; reset: how long new connections are refused (zero: not at all)
	hold  span // reset: the caught holder's time inside; zero means TTL/2 + dur, drawn per strike
	sched schedule
}

func parsePartition(p map[string]string) (partitionConfig, error) {
	ps := newParams("partition", p)
	c := partitionConfig{
		index: ps.index("node", 0),
		mode:  ps.choice("mode", "cut", "delay", "reset"),
		delay: ps.duration("delay", DefaultDelay),
		sched: ps.schedule(),
	}
	if c.mode == "reset" {
		// Read only here, so that hold= with another mode is reported as
		// unknown rather than silently ignored.
		c.dur = ps.span("for", span{})
		c.hold = ps.span("hold", span{})
	} else {
		c.dur = ps.span("for", fixed(DefaultPartitionFor))
	}
	if err := ps.done(); err != nil {
		return c, err
	}
	if c.mode == "reset" && !c.hold.isZero() && c.hold.lo <= c.dur.hi {
		return c, &usage.Error{Flag: "fault", Msg: fmt.Sprintf("partition: hold=%s must exceed for=%s: a contender can only take the lock from the caught holder once new connections are accepted again", c.hold, c.dur)}
	}
	return c, nil
}

// partition cuts off, delays or resets the traffic to one server.
type partition struct {
	cfg partitionConfig

	target servers.Target
	name   string      // the server, for events
	proxy  *proxy      // cut, delay
	reset  *resetProxy // reset

	// mode=reset: what catches a holder, and when it caught it.
	env     *loadgen.FaultEnv
	catcher *catcher
	hold    time.Duration // reset: this strike's hold, set before the trap is armed

	mu     sync.Mutex
	caught time.Time // when the holder was caught
}

var _ striker = (*partition)(nil)

func (f *partition) Name() string { return "partition" }

// Setup puts a proxy in front of the server and points the lock config at
// it: toxiproxy for cut and delay, a plain forwarder for reset (see
// resetProxy), which also sets the trap.
func (f *partition) Setup(_ context.Context, env *loadgen.FaultEnv) error {
	upstream, err := f.target.Addr(f.cfg.index)
	if err != nil {
		return fmt.Errorf("partition: %w", err)
	}
	var addr string
	if f.cfg.mode == "reset" {
		if f.reset, err = newResetProxy(upstream); err != nil {
			return err
		}
		addr = f.reset.Addr()
	} else {
		if f.proxy, err = newProxy("partition", upstream); err != nil {
			return err
		}
		addr = f.proxy.Addr()
	}
	routed, err := f.target.Reroute(env.Lock, f.cfg.index, addr)
	if err != nil {
		f.closeProxy()
		return fmt.Errorf("partition: %w", err)
	}
	f.name = fmt.Sprintf("%s %d (%s)", f.target.Noun(), f.cfg.index, upstream)
	env.Lock = routed
	if f.cfg.mode == "reset" {
		f.env = env
		f.catcher = newCatcher(env, nil, f.holdHolder)
		f.catcher.aim(!f.cfg.sched.random)
	}
	return nil
}

// Inject strikes on the fault's schedule.
func (f *partition) Inject(ctx context.Context, env *loadgen.FaultEnv) error {
	if f.catcher != nil {
		f.catcher.see(env.Instances)
	}
	return inject(ctx, env, f.cfg.sched, f)
}

// strike cuts or delays the traffic for a drawn for=, then heals it; or,
// with mode=reset, resets every connection while a holder is inside.
func (f *partition) strike(ctx context.Context, env *loadgen.FaultEnv, d *draws) error {
	dur := d.of(f.cfg.dur)
	if f.cfg.mode == "reset" {
		return f.strikeReset(ctx, env, dur, d)
	}
	what := f.name + " cut off (every byte dropped both ways)"
	err := f.proxy.cut()
	if f.cfg.mode == "delay" {
		what = fmt.Sprintf("%s delayed by %s per reply", f.name, ms(f.cfg.delay))
		err = f.proxy.delay(f.cfg.delay)
	}
	if err != nil {
		return errors.Join(err, f.proxy.heal())
	}
	env.Begin(what)
	strategies.Sleep(ctx, dur)
	if err := f.proxy.heal(); err != nil {
		return err
	}
	env.End(f.name + " reachable again")
	return nil
}

// strikeReset catches a holder (see trap), keeps it inside for a drawn
// hold= (default TTL/2 + for), and meanwhile resets every connection
// through the proxy, the holder's own among them. A session lock
// (pg-advisory) dies with its connection; a lease (setnx, pg-onconflict)
// outlives it while the hold is within the TTL.
func (f *partition) strikeReset(ctx context.Context, env *loadgen.FaultEnv, dur time.Duration, d *draws) error {
	f.hold = env.Scenario.TTL/2 + dur
	if !f.cfg.hold.isZero() {
		f.hold = d.of(f.cfg.hold)
	}
	if _, ok := f.catcher.catch(ctx); !ok {
		env.Event(fmt.Sprintf("partition not injected: no holder of a new payment entered %s", f.cfg.sched.when()))
		return nil
	}
	refuse := dur > 0
	f.reset.reset(refuse)
	env.Forgot(time.Now())
	if refuse {
		env.Event(fmt.Sprintf("%s: every connection through the proxy reset (TCP RST), the holder's among them; new ones reset too for %s", f.name, ms(dur)))
		strategies.Sleep(ctx, dur)
		f.reset.accept()
		env.Event(f.name + " accepting connections again")
	} else {
		env.Event(fmt.Sprintf("%s: every connection through the proxy reset (TCP RST), the holder's among them; new ones accepted", f.name))
	}
	f.mu.Lock()
	left := f.hold - time.Since(f.caught)
	f.mu.Unlock()
	strategies.Sleep(ctx, left)
	if err := f.catcher.letGo(); err != nil {
		return err
	}
	env.End("holder's critical section over")
	return nil
}

// holdHolder runs inside the caught holder's Enter: it keeps the holder in
// its critical section for the strike's hold, by slowing that section (an
// in-process instance: FaultEnv.SlowNext) or by stopping its process
// (continued by strikeReset).
func (f *partition) holdHolder(r store.EnterReq) {
	f.mu.Lock()
	f.caught = time.Now()
	f.mu.Unlock()
	how, err := f.catcher.keep(r, f.hold)
	if err != nil {
		how = "held"
	}
	f.env.Begin(fmt.Sprintf("holder caught inside its critical section (%s for %s): instance %d, key %s, payment %d, token %d",
		how, ms(f.hold), r.Instance, r.LockKey, r.Payment, r.Token))
}

// Close continues a holder Inject could not, and stops the proxy: the run
// is over, nobody uses the rerouted config.
func (f *partition) Close() error {
	return errors.Join(f.catcher.letGo(), f.closeProxy())
}

func (f *partition) closeProxy() error {
	var err error
	if f.proxy != nil {
		err = f.proxy.heal()
		f.proxy.close()
	}
	if f.reset != nil {
		f.reset.close()
	}
	return err
}
