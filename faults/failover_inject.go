package faults

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockbench/lockbench/loadgen"
	"github.com/lockbench/lockbench/loadgen/store"
	"github.com/lockbench/lockbench/servers"
	"github.com/lockbench/lockbench/strategies"
	"github.com/lockbench/lockbench/strategies/redisutil"
)

// failover is the failover fault: it holds replication back before the
// lock is taken, catches a holder whose lock only the primary has, and
// kills the primary ("The failover fault" in the package doc).
type failover struct {
	cfg    failoverConfig
	target servers.Target

	primary servers.Member
	// replicas are those whose replication is held back, each with its
	// proxy and a direct client; acked those that keep replicating
	// (acked=N) and die with the primary.
	replicas []servers.Member
	proxies  []*proxy
	checks   []*redis.Client
	acked    []servers.Member

	// watch keeps the caught holder inside and watches for a second
	// holder of its lock key.
	watch

	mu     sync.Mutex
	killed []servers.Member // killed and not started again
	healed bool
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
	f.watch.start(env, f.cfg.hold, f.onPrimaryOnly)
	env.OnEnter(f.watchContender)
	// watchContender holds a third holder at its Enter, and the trap's
	// filter asks the replicas from inside the Enter.
	env.HoldsEnters()
	return nil
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
