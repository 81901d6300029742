package faults

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockbench/lockbench/internal/usage"
	"github.com/lockbench/lockbench/loadgen"
	"github.com/lockbench/lockbench/loadgen/store"
	"github.com/lockbench/lockbench/servers"
	"github.com/lockbench/lockbench/strategies"
	"github.com/lockbench/lockbench/strategies/redisutil"
)

// Failover defaults.
const (
	// FailoverMinTTL is the shortest TTL a failover run has: 10s. The
	// caught holder must still hold a valid lock while the Sentinels notice
	// the dead primary (down-after 500ms), elect a leader and promote a
	// replica (2-3s here), and a contender takes the lock on the new one;
	// with a TTL shorter than that the lock would also be lost by expiry,
	// as under pause, and WAIT could not be told apart from no WAIT. A
	// shorter --ttl is raised to this.
	FailoverMinTTL = 10 * time.Second
	// FailoverMinWorkers is the fewest workers per instance a failover run
	// has: 8 (a smaller --workers is raised to this; see adjust).
	FailoverMinWorkers = 8
	// DefaultFailoverCatch is how long the fault waits for a holder to
	// catch once replication is held back: 2s. With WAIT nobody acquires
	// while it is (every WAIT times out), so the fault goes on without one.
	DefaultFailoverCatch = 2 * time.Second
	// DefaultFailoverPromote is how long the fault lets the Sentinels
	// promote a replica on their own before it forces a failover (SENTINEL
	// FAILOVER): 3s, well over what it takes here (under 2s); a split vote
	// would otherwise be retried only after twice the failover timeout.
	DefaultFailoverPromote = 3 * time.Second
	// failoverHoldShare is the caught holder's time inside, as a share of
	// the TTL, when hold= is not given: 0.6 (6s of 10s): room for the
	// promotion (forced after DefaultFailoverPromote), for the clients to
	// find the new primary, and for a contender to take the lock there.
	failoverHoldShare = 0.6
	// failoverTail is the load offered after the caught holder's time
	// inside is over: 1s.
	failoverTail = time.Second
	// afterContender is how long a stopped caught holder stays inside once
	// a second holder of its lock key entered: 50ms (awaitContender).
	afterContender = 50 * time.Millisecond
	// writeGrace is how long a continued holder process has to write
	// before later holders of its key are let in: 500ms.
	writeGrace = 500 * time.Millisecond

	// relinkTimeout bounds the wait for a replica's link through its proxy
	// (or to the new primary, when healing): 5s.
	relinkTimeout = 5 * time.Second
)

const failoverParams = "hold=D (how long the caught holder stays inside, within its lock's validity; default 0.6 × TTL), " +
	"catch=D (how long to wait for a holder once replication is held back, default 2s), " +
	"promote=D (how long the Sentinels may take before the failover is forced, default 3s), " +
	"acked=N (replicas whose replication is not held back, so that they acknowledge WAIT, and that die with the primary; default 0), " +
	scheduleParams + " (schedule=random: the primary is killed at random moments, nothing held back or caught; promote= and every= apply)"

func init() {
	register(Kind{
		Name: "failover",
		Description: "hold back replication from the Redis primary to its replicas (their links through proxies that drop every byte), " +
			"catch a holder whose lock only the primary has inside its critical section, kill the primary: the Sentinels promote a replica " +
			"that never had the lock, and a contender takes it while the holder is still inside; the old primary rejoins as a replica " +
			"(--redis-topology sentinel; with --redis-wait nobody acquires while replication is held back)",
		Params:     failoverParams,
		AppliesTo:  singleRedis,
		NeedsLocal: true,
		Adjust: func(sc loadgen.Scenario, p map[string]string) (loadgen.Scenario, error) {
			c, err := parseFailover(p)
			if err != nil {
				return sc, err
			}
			return c.adjust(sc)
		},
		New: func(p map[string]string, target servers.Target) (loadgen.Fault, error) {
			c, err := parseFailover(p)
			if err != nil {
				return nil, err
			}
			if c.sched.random {
				return &randomFailover{promote: c.promote, sched: c.sched, target: target}, nil
			}
			return &failover{cfg: c, target: target}, nil
		},
	})
	targetChecks["failover"] = func(t servers.Target) error {
		if !t.Replicated() {
			return errors.New("failover needs a replicated Redis: --redis-topology sentinel (or " + servers.EnvRedisSentinels + ")")
		}
		return nil
	}
	targetChecks["partition"] = func(t servers.Target) error {
		if t.Replicated() {
			return servers.ErrReplicated
		}
		return nil
	}
}

// targetChecks say, for the faults whose working depends on how the
// servers are laid out, whether they can run on a target (Spec.Fits).
var targetChecks = map[string]func(servers.Target) error{}

// Fits reports why the fault cannot run on the servers of target (a
// failover needs a replicated Redis; a partition cannot reroute the clients
// of one), or nil when it can.
func (s Spec) Fits(t servers.Target) error {
	if check, ok := targetChecks[s.Name]; ok {
		return check(t)
	}
	return nil
}

// singleRedis is failover's AppliesTo: single-node Redis locks, which a
// replicated Redis serves.
func singleRedis(info strategies.Info) bool {
	return info.Need.Backend == strategies.BackendRedis && info.Need.Nodes <= 1 && !info.Transactional
}

// failoverConfig is failover's parameters.
type failoverConfig struct {
	hold    time.Duration // 0: failoverHoldShare × TTL, decided at Setup
	catch   time.Duration
	promote time.Duration
	acked   int
	at      float64
	sched   schedule
}

// parseFailover reads failover's parameters. With schedule=random only
// promote= and every= apply: a random strike kills whatever primary there
// is at a random moment, with no holder caught (randomFailover).
func parseFailover(p map[string]string) (failoverConfig, error) {
	ps := newParams("failover", p)
	c := failoverConfig{sched: ps.schedule(), promote: ps.duration("promote", DefaultFailoverPromote)}
	if !c.sched.random {
		c.hold = ps.duration("hold", 0)
		c.catch = ps.duration("catch", DefaultFailoverCatch)
		c.acked = ps.index("acked", 0)
		c.at = c.sched.at
	}
	return c, ps.done()
}

// holdFor is how long the caught holder stays inside with TTL ttl.
func (c failoverConfig) holdFor(ttl time.Duration) time.Duration {
	if c.hold > 0 {
		return c.hold
	}
	return time.Duration(failoverHoldShare * float64(ttl))
}

// adjust is the scenario a failover needs: a TTL of at least
// FailoverMinTTL, FailoverMinWorkers workers, and (open loop) enough load
// after the strike for a contender to come while the caught holder is
// inside: payments (or a duration) raised so that the caught holder's time
// and failoverTail are offered after the share at.
func (c failoverConfig) adjust(sc loadgen.Scenario) (loadgen.Scenario, error) {
	sc.TTL = max(sc.TTL, FailoverMinTTL)
	if err := c.check(sc); err != nil {
		return sc, err
	}
	// The locks a failover resurrects (released on the old primary after
	// replication was held back, or whose release failed while there was
	// no primary: the new one has them until their TTL) keep the workers
	// that want them waiting; with few workers they would be all, and no
	// contender would come for the caught holder's key in time.
	sc.Workers = max(sc.Workers, FailoverMinWorkers)
	after := c.holdFor(sc.TTL) + failoverTail
	if sc.Rate > 0 && sc.Payments > 0 {
		sc.Payments = max(sc.Payments, int(math.Ceil(sc.Rate*after.Seconds()/(1-c.at))))
	}
	if sc.Duration > 0 {
		sc.Duration = max(sc.Duration, time.Duration(float64(after)/(1-c.at)))
	}
	return sc, nil
}

func (c failoverConfig) check(sc loadgen.Scenario) error {
	if c.hold >= sc.TTL {
		return &usage.Error{Flag: "fault", Msg: fmt.Sprintf("failover: hold=%s must be shorter than the TTL (%s): the holder must still hold a valid lock when a contender takes it", c.hold, sc.TTL)}
	}
	return nil
}

// failover is the failover fault. Replication from the primary is held
// back before the lock is taken, not after: a primary sends a write to its
// replicas microseconds after it executes it, before the client has even
// read its reply, so a fault that waited for a holder and then cut the
// links would always be too late. The replicas' links are therefore routed
// through proxies at the strike (REPLICAOF the proxy: a partial resync,
// milliseconds), and the proxies then drop every byte both ways. The
// Sentinels re-point a replica that replicates from an address other than
// the primary's only a failover timeout (servers.SentinelFailoverTimeout)
// after they notice, long after this fault is over. Every lock taken from
// then on exists on the primary alone; the trap catches the first holder
// of a new payment whose lock key no replica has (one taken before the cut
// would be on them), keeps it inside its critical section, and the primary
// is killed. The Sentinels promote a replica, which never had that lock;
// clients find the new primary through the Sentinels, and the next holder
// of the lock key gets it there while the caught holder is still inside
// (watchContender then fixes the order of their writes). The old primary
// is started again and rejoins as a replica of the new one.
//
// With WAIT nobody acquires while replication is held back: every WAIT
// times out, the lock is released and counts as not acquired. The fault
// waits cfg.catch for a holder, then kills the primary anyway, so that
// the failover's cost is measured too. With acked=N the first N replicas
// keep replicating, acknowledge WAIT N, and are killed with the primary:
// the replica promoted never had the lock, WAIT or not.
//
// Caveats: the kill leaves, on the new primary, the locks that were
// released on the old one after the cut, and those whose release failed
// while there was no primary: they block their keys until their TTL (the
// availability a failover costs besides its outage). A contender that was
// already waiting for the caught holder's lock gives up when the primary
// dies (the load generator does not retry an unavailable server), so the
// lock is granted twice to a later delivery of the same key: with
// --lock-key payment there is none, and the run shows only the outage.
type failover struct {
	cfg    failoverConfig
	target servers.Target

	env     *loadgen.FaultEnv
	catcher *catcher
	primary servers.Member
	// replicas are those whose replication is held back, each with its
	// proxy and a direct client; acked those that keep replicating
	// (acked=N) and die with the primary.
	replicas []servers.Member
	proxies  []*proxy
	checks   []*redis.Client
	acked    []servers.Member

	mu     sync.Mutex
	killed []servers.Member // killed and not started again
	healed bool
	// caught is the caught holder while it is inside; contended is closed
	// once a second holder of its lock key entered (watchContender), and
	// written once the caught holder has been let go and has written.
	caught    *store.EnterReq
	contended chan struct{}
	written   chan struct{}
	letGo     sync.Once
	seen      bool
	gated     bool // a third holder was held at its entry
}

func (f *failover) Name() string { return "failover" }

// Setup finds the group's primary and replicas, starts a proxy in front of
// the primary for each replica's link, and sets the trap.
func (f *failover) Setup(ctx context.Context, env *loadgen.FaultEnv) error {
	if err := failoverApplies(env, f.target); err != nil {
		return err
	}
	if err := f.cfg.check(env.Scenario); err != nil {
		return err
	}
	f.cfg.hold = f.cfg.holdFor(env.Scenario.TTL)
	f.env = env
	// Roles waits for a settled group: an earlier fault may have left a
	// failover under way, or a node that still believes it is a primary.
	p, others, err := f.target.Roles(ctx)
	if err != nil {
		return fmt.Errorf("failover: %w", err)
	}
	f.primary = p
	if f.cfg.acked >= len(others) {
		return fmt.Errorf("failover: acked=%d leaves none of the %d replicas to promote", f.cfg.acked, len(others))
	}
	f.acked, others = others[:f.cfg.acked], others[f.cfg.acked:]
	password := f.target.Config.RedisPassword
	for i, r := range others {
		px, err := newProxy(fmt.Sprintf("replication-%d", i), p.Addr)
		if err != nil {
			f.closeProxies()
			return fmt.Errorf("failover: %w", err)
		}
		f.proxies = append(f.proxies, px)
		f.replicas = append(f.replicas, r)
		f.checks = append(f.checks, redis.NewClient(redisutil.Options(r.Addr, password)))
	}
	if len(f.replicas) == 0 {
		return errors.New("failover: the primary has no replica to promote")
	}
	f.contended, f.written = make(chan struct{}), make(chan struct{})
	f.catcher = newCatcher(env, f.onPrimaryOnly, f.holdHolder)
	env.OnEnter(f.watchContender)
	// watchContender holds a third holder at its Enter, and the trap's
	// filter asks the replicas from inside the Enter.
	env.HoldsEnters()
	return nil
}

// failoverApplies reports why either schedule of the failover cannot run:
// a strategy that is not a single-node Redis lock, a Redis that is not
// replicated, or Sentinels lockbench did not start (it must kill and start
// the nodes).
func failoverApplies(env *loadgen.FaultEnv, target servers.Target) error {
	if !singleRedis(env.Info) {
		return fmt.Errorf("failover does not apply to %s", env.Strategy)
	}
	if err := (Spec{Name: "failover"}).Fits(target); err != nil {
		return err
	}
	if !target.Local() {
		return fmt.Errorf("failover: %w: the Sentinels were given (%s); unset that to let lockbench start its own", servers.ErrNotLocal, target.Given())
	}
	return nil
}

// watchContender runs inside every Enter. It records the first holder of
// the caught holder's lock key that enters while the caught holder is
// inside (the lock granted twice), and holds any later one at its entry
// until the caught holder has written (cfg.hold at most). So the writes
// land in one order every run: the second holder's (from the same read as
// the caught holder's), then the caught holder's, with no third holder's
// newer token seen in between; a token handed out twice then reaches the
// store twice in a row, which the strict rule is there to refuse.
func (f *failover) watchContender(r store.EnterReq) {
	f.mu.Lock()
	c := f.caught
	same := c != nil && r.LockKey == c.LockKey && r.Payment != c.Payment
	first := same && !f.seen
	if first {
		f.seen = true
		close(f.contended)
	}
	gate := same && !first
	announce := gate && !f.gated
	f.gated = f.gated || gate
	written := f.written
	f.mu.Unlock()
	switch {
	case first:
		f.env.Event(fmt.Sprintf("a second holder entered lock key %s while the caught holder is inside: instance %d, payment %d, token %d",
			r.LockKey, r.Instance, r.Payment, r.Token))
	case gate:
		if announce {
			f.env.Event(fmt.Sprintf("a third holder of %s held at its entry until the caught holder has written: instance %d, payment %d, token %d",
				r.LockKey, r.Instance, r.Payment, r.Token))
		}
		t := time.NewTimer(f.cfg.hold)
		defer t.Stop()
		select {
		case <-written:
		case <-t.C:
		}
	}
}

// onPrimaryOnly is the trap's filter: the holder's lock key is on no
// replica. A lock taken before replication was held back reached them.
func (f *failover) onPrimaryOnly(r store.EnterReq) bool {
	ctx, cancel := context.WithTimeout(context.Background(), checkTimeout)
	defer cancel()
	key := redisutil.LockKey(r.LockKey)
	for _, c := range f.checks {
		if n, err := c.Exists(ctx, key).Result(); err != nil || n != 0 {
			return false
		}
	}
	return true
}

// holdHolder runs inside the caught holder's Enter: it keeps the holder in
// its critical section for cfg.hold, by slowing that section (an in-process
// instance) or stopping its process (continued by Inject).
func (f *failover) holdHolder(r store.EnterReq) {
	how, _ := f.catcher.keep(r, f.cfg.hold)
	f.mu.Lock()
	f.caught = &r
	f.mu.Unlock()
	f.env.Event(fmt.Sprintf("holder caught inside its critical section with a lock no replica that can be promoted has (%s for %s, within its lock's validity): instance %d, key %s, payment %d, token %d",
		how, ms(f.cfg.hold), r.Instance, r.LockKey, r.Payment, r.Token))
}

// Inject holds replication back at cfg.at, catches a holder, kills the
// primary, waits for the promotion, starts the old primary again as a
// replica, lets the holder go, and puts the replication links back.
func (f *failover) Inject(ctx context.Context, env *loadgen.FaultEnv) error {
	defer f.forget() // whichever way Inject ends, nobody is held at entry after it
	f.catcher.see(env.Instances)
	if env.WaitOffered(ctx, f.cfg.at) != nil {
		return nil
	}
	if err := f.holdBack(ctx); err != nil {
		return errors.Join(err, f.heal())
	}
	what := fmt.Sprintf("replication from the primary %s to %s held back (their links through proxies that drop every byte): a lock taken now exists on the primary alone",
		f.primary.Node.Name(), names(f.replicas))
	if len(f.acked) > 0 {
		what = fmt.Sprintf("replication from the primary %s to %s held back (their links through proxies that drop every byte), not to %s: a lock taken now is on the primary and %s only, which acknowledge it (WAIT)",
			f.primary.Node.Name(), names(f.replicas), names(f.acked), names(f.acked))
	}
	env.Begin(what)
	tctx, cancel := context.WithTimeout(ctx, f.cfg.catch)
	_, caught := f.catcher.catch(tctx)
	cancel()
	at := time.Now()
	if !caught {
		env.Event(fmt.Sprintf("no holder of a new payment entered within %s with replication held back (with WAIT, every lock was refused as not replicated)", ms(f.cfg.catch)))
	}
	if ctx.Err() != nil {
		return errors.Join(f.catcher.letGo(), f.heal())
	}
	if err := f.kill(); err != nil {
		return errors.Join(err, f.restartOld(ctx), f.catcher.letGo(), f.heal())
	}
	if len(f.acked) > 0 {
		env.Event(fmt.Sprintf("%s (the primary) and %s (which acknowledged its writes) killed", f.primary.Node.Name(), names(f.acked)))
	} else {
		env.Event(f.primary.Node.Name() + " (the primary) killed")
	}
	promoted, how, err := awaitPromotion(ctx, f.target, f.primary.Addr, f.cfg.promote)
	if err != nil {
		env.Event(err.Error())
		return errors.Join(fmt.Errorf("failover: %w", err), f.restartOld(ctx), f.catcher.letGo(), f.heal())
	}
	env.Event(fmt.Sprintf("%s promoted to primary %s, %s after the kill", promoted, how, ms(time.Since(at))))
	if err := f.restartOld(ctx); err != nil {
		return errors.Join(err, f.catcher.letGo(), f.heal())
	}
	env.Event(fmt.Sprintf("%s started again: rejoined as replicas of %s", names(append([]servers.Member{f.primary}, f.acked...)), promoted))
	if caught {
		f.awaitContender(ctx, at)
		err := f.catcher.letGo()
		strategies.Sleep(ctx, writeGrace)
		f.forget()
		if err != nil {
			return errors.Join(err, f.heal())
		}
		env.End("holder's critical section over")
	} else {
		env.End("failover over")
	}
	return f.heal()
}

// forget ends the caught holder's turn: later holders of its key are let
// in (watchContender) and no longer watched.
func (f *failover) forget() {
	f.letGo.Do(func() {
		f.mu.Lock()
		f.caught = nil
		close(f.written)
		f.mu.Unlock()
	})
}

// awaitContender keeps the caught holder inside until cfg.hold has passed
// since at or, for a stopped holder process, until a second holder of its
// lock key has been inside for afterContender, long enough to have
// written. A slowed in-process holder stays the whole cfg.hold.
func (f *failover) awaitContender(ctx context.Context, at time.Time) {
	stopped := f.catcher.holding()
	t := time.NewTimer(f.cfg.hold - time.Since(at))
	defer t.Stop()
	contended := f.contended
	if !stopped {
		contended = nil
	}
	select {
	case <-t.C:
	case <-ctx.Done():
	case <-contended:
		strategies.Sleep(ctx, min(afterContender, f.cfg.hold-time.Since(at)))
	}
}

// holdBack routes each replica's link through its proxy, waits until it is
// up and in step with the primary, then cuts the proxies.
func (f *failover) holdBack(ctx context.Context) error {
	for i, r := range f.replicas {
		if err := replicaOf(ctx, f.checks[i], f.proxies[i].Addr()); err != nil {
			return fmt.Errorf("failover: route %s's replication through a proxy: %w", r.Node.Name(), err)
		}
	}
	for i, r := range f.replicas {
		if err := awaitLink(ctx, f.checks[i], f.proxies[i].Addr()); err != nil {
			return fmt.Errorf("failover: %s's replication through its proxy: %w", r.Node.Name(), err)
		}
	}
	for _, p := range f.proxies {
		if err := p.cut(); err != nil {
			return err
		}
	}
	return nil
}

// awaitPromotion waits until the Sentinels of target name a primary other
// than old, forcing a failover after promote.
func awaitPromotion(ctx context.Context, target servers.Target, old string, promote time.Duration) (addr, how string, err error) {
	cfg := target.Config
	began := time.Now()
	deadline := began.Add(promote)
	forced, forceErr := false, "not yet tried"
	for {
		actx, cancel := context.WithTimeout(ctx, time.Second)
		addr, err := servers.PrimaryAddr(actx, cfg.RedisSentinels, cfg.RedisMaster)
		cancel()
		if err == nil && addr != old {
			if forced {
				return addr, "(failover forced after " + ms(promote) + ")", nil
			}
			return addr, "by the Sentinels", nil
		}
		if err == nil {
			err = fmt.Errorf("the Sentinels still name %s", addr)
		}
		switch {
		case ctx.Err() != nil:
			// The fault was stopped first (the load ended): say how far
			// the failover got.
			return "", "", fmt.Errorf("%s: %w", servers.Redact(fmt.Sprintf("no replica promoted %s after the kill, when the fault was stopped (forced failover: %s; last answer: %v)",
				ms(time.Since(began)), forceErr, err)), ctx.Err())
		case time.Now().After(deadline) && !forced:
			ferr := servers.ForceFailover(ctx, cfg.RedisSentinels, cfg.RedisMaster)
			forced, forceErr = ferr == nil, "started"
			if ferr != nil {
				forceErr = ferr.Error()
			}
			deadline = time.Now().Add(promote)
		case time.Now().After(deadline):
			return "", "", fmt.Errorf("no replica promoted %s after a forced failover (last answer: %v)", ms(promote), err)
		}
		strategies.Sleep(ctx, 50*time.Millisecond)
	}
}

// kill kills the primary and the replicas that die with it.
func (f *failover) kill() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, m := range append([]servers.Member{f.primary}, f.acked...) {
		if err := m.Node.Kill(); err != nil {
			return fmt.Errorf("failover: kill %s: %w", m.Node.Name(), err)
		}
		f.killed = append(f.killed, m)
	}
	return nil
}

// restartOld starts the killed nodes again: the servers package starts a
// node of the group as a replica of the primary the Sentinels name.
func (f *failover) restartOld(ctx context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	uctx, cancel := undoCtx(ctx)
	defer cancel()
	for len(f.killed) > 0 {
		m := f.killed[0]
		if err := m.Node.Start(uctx); err != nil {
			return fmt.Errorf("failover: start %s again: %w", m.Node.Name(), err)
		}
		f.killed = f.killed[1:]
	}
	return nil
}

// heal points every replica that still replicates through a proxy at the
// primary the Sentinels name, and stops the proxies: the group is as
// before, with another primary.
func (f *failover) heal() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.healed {
		return nil
	}
	f.healed = true
	cfg := f.target.Config
	ctx, cancel := context.WithTimeout(context.Background(), undoTimeout)
	defer cancel()
	primary, err := servers.PrimaryAddr(ctx, cfg.RedisSentinels, cfg.RedisMaster)
	if err != nil {
		primary = f.primary.Addr // no Sentinel answers: no failover either
	}
	var errs []error
	for i, r := range f.replicas {
		if r.Addr == primary {
			continue
		}
		info, ierr := replicationInfo(ctx, f.checks[i])
		if ierr == nil && net.JoinHostPort(info["master_host"], info["master_port"]) != f.proxies[i].Addr() {
			continue // the Sentinels re-pointed it
		}
		if rerr := replicaOf(ctx, f.checks[i], primary); rerr != nil {
			errs = append(errs, fmt.Errorf("failover: point %s at %s again: %w", r.Node.Name(), primary, rerr))
		}
	}
	f.closeProxies()
	return errors.Join(errs...)
}

// Close puts back whatever Inject could not: the holder, the old primary,
// the replication links.
func (f *failover) Close() error {
	err := errors.Join(f.catcher.letGo(), f.restartOld(context.Background()), f.heal())
	f.forget()
	for _, c := range f.checks {
		_ = c.Close()
	}
	return err
}

func (f *failover) closeProxies() {
	for _, p := range f.proxies {
		_ = p.heal()
		p.close()
	}
	f.proxies = nil
}

// names names the members for an event: "redis-1 (…) and redis-2 (…)".
func names(ms []servers.Member) string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Node.Name()
	}
	return strings.Join(out, " and ")
}

// replicaOf sends REPLICAOF addr to the node behind c.
func replicaOf(ctx context.Context, c *redis.Client, addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	return c.Do(ctx, "REPLICAOF", host, port).Err()
}

// awaitLink waits until the replica behind c replicates from addr with its
// link up.
func awaitLink(ctx context.Context, c *redis.Client, addr string) error {
	ctx, cancel := context.WithTimeout(ctx, relinkTimeout)
	defer cancel()
	var last string
	for {
		info, err := replicationInfo(ctx, c)
		if err == nil {
			last = fmt.Sprintf("master %s:%s, link %s", info["master_host"], info["master_port"], info["master_link_status"])
			if net.JoinHostPort(info["master_host"], info["master_port"]) == addr && info["master_link_status"] == "up" {
				return nil
			}
		}
		if !strategies.Sleep(ctx, 10*time.Millisecond) {
			return fmt.Errorf("link not up within %s (%s)", ms(relinkTimeout), last)
		}
	}
}

// replicationInfo is INFO replication of the node behind c.
func replicationInfo(ctx context.Context, c *redis.Client) (map[string]string, error) {
	text, err := c.Info(ctx, "replication").Result()
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for line := range strings.SplitSeq(text, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			out[k] = v
		}
	}
	return out, nil
}
