package faults

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockbench/lockbench/loadgen"
	"github.com/lockbench/lockbench/loadgen/store"
	"github.com/lockbench/lockbench/servers"
	"github.com/lockbench/lockbench/strategies"
)

// pgFailover is the failover fault on a Postgres primary with a streaming
// standby (--pg-topology replica): the standby's link to the primary goes
// through a proxy that holds every byte back, a holder whose lock only
// the primary has is caught inside, the primary is SIGKILLed and the
// standby promoted (pg_promote). The clients' multi-host DSN finds the new
// primary. The old primary stays down for the rest of the run: Postgres
// cannot take a former primary back without pg_rewind. Close makes it a
// standby of the new primary again, from a fresh base backup, so that the
// next run finds the topology it started with.
type pgFailover struct {
	cfg    failoverConfig
	target servers.Target

	primary, standby *servers.Postgres
	proxy            *proxy
	// check is a pool on the standby, for the trap's filter.
	check *pgxpool.Pool

	watch

	mu     sync.Mutex
	killed bool // the old primary is down and not yet a standby again
	healed bool
}

// Setup finds the primary and its standby and starts the proxy the
// standby's link will go through.
func (f *pgFailover) Setup(ctx context.Context, env *loadgen.FaultEnv) error {
	if err := pgFailoverApplies(env, f.target); err != nil {
		return err
	}
	if err := f.cfg.check(env.Scenario); err != nil {
		return err
	}
	f.cfg.hold = f.cfg.holdFor(env.Scenario.TTL)
	p, s, err := f.target.PgRoles(ctx)
	if err != nil {
		return fmt.Errorf("failover: %w", err)
	}
	f.primary, f.standby = p, s
	if f.proxy, err = newProxy("pg-replication", p.Addr()); err != nil {
		return fmt.Errorf("failover: %w", err)
	}
	if f.check, err = pgxpool.New(ctx, s.DSN); err != nil {
		f.proxy.close()
		return fmt.Errorf("failover: %w", err)
	}
	f.watch.start(env, f.cfg.hold, f.onPrimaryOnly)
	// Designed: the caught holder's payment has another delivery asking
	// for its lock, which the promoted standby will grant; a strike whose
	// lock nobody asks for while it is forgotten missed (FaultEnv.End).
	f.catcher.aim(true)
	env.OnEnter(f.watchContender)
	env.HoldsEnters()
	return nil
}

func (f *pgFailover) Name() string { return "failover" }

// onPrimaryOnly is the trap's filter: the standby, promoted, would grant
// the holder's lock. An advisory lock (no token) is never on it; a claim
// row (pg-onconflict's lockbench_locks) must not be live there: neither
// the holder's own claim, committed just before the link was held back,
// nor an earlier holder's whose release the standby never got, either of
// which would keep contenders out of the new primary until it expired.
func (f *pgFailover) onPrimaryOnly(r store.EnterReq) bool {
	if r.Token == 0 {
		return true
	}
	ctx, cancel := context.WithTimeout(context.Background(), checkTimeout)
	defer cancel()
	var live bool
	err := f.check.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM lockbench_locks WHERE key = $1 AND expires_at > now())", r.LockKey).Scan(&live)
	return err == nil && !live
}

// Inject holds the standby's link back at cfg.at, catches a holder, kills
// the primary, promotes the standby, keeps the holder inside while a
// contender comes, and lets it go.
func (f *pgFailover) Inject(ctx context.Context, env *loadgen.FaultEnv) error {
	defer f.forget()
	f.catcher.see(env.Instances)
	if env.WaitOffered(ctx, f.cfg.at) != nil {
		return nil
	}
	if err := f.standby.RouteReplication(ctx, f.primary, f.proxy.Addr()); err != nil {
		return errors.Join(fmt.Errorf("failover: %w", err), f.heal())
	}
	if err := f.proxy.cut(); err != nil {
		return errors.Join(err, f.heal())
	}
	env.Begin(fmt.Sprintf("replication from the primary %s to the standby %s held back (its link through a proxy that drops every byte): a lock or commit made now exists on the primary alone",
		f.primary.Name(), f.standby.Name()))
	tctx, cancel := context.WithTimeout(ctx, f.cfg.catch)
	_, caught := f.catcher.catch(tctx)
	cancel()
	if !caught {
		env.Event(fmt.Sprintf("no holder of a new payment entered within %s with replication held back (with --pg-sync on, every commit waited for the standby)", ms(f.cfg.catch)))
	}
	// A synchronous standby that kept every lock out while the link was
	// held back is the answer; asynchronous, a strike that caught nobody
	// proved nothing.
	end := env.End
	if !caught && !f.target.PgSync() {
		end = env.EndMissed
	}
	if ctx.Err() != nil {
		return errors.Join(f.catcher.letGo(), f.heal())
	}
	at := time.Now()
	f.mu.Lock()
	err := f.primary.Kill()
	f.killed = err == nil
	f.mu.Unlock()
	if err != nil {
		return errors.Join(fmt.Errorf("failover: kill %s: %w", f.primary.Name(), err), f.catcher.letGo(), f.heal())
	}
	env.Event(f.primary.Name() + " (the primary) killed")
	pctx, pcancel := context.WithTimeout(ctx, f.cfg.promote+10*time.Second)
	err = f.standby.Promote(pctx)
	pcancel()
	if err != nil {
		env.Event(err.Error())
		return errors.Join(fmt.Errorf("failover: %w", err), f.catcher.letGo(), f.heal())
	}
	env.Forgot(time.Now()) // the caught holder's lock is on nobody now
	env.Event(fmt.Sprintf("%s promoted to primary (pg_promote), %s after the kill; %s stays down (a former primary needs pg_rewind)",
		f.standby.Name(), ms(time.Since(at)), f.primary.Name()))
	if caught {
		f.awaitContender(ctx, at)
		err := f.catcher.letGo()
		strategies.Sleep(ctx, writeGrace)
		f.forget()
		if err != nil {
			return errors.Join(err, f.heal())
		}
		end("holder's critical section over")
	} else {
		end("failover over")
	}
	return f.heal()
}

// heal stops the proxy: the promoted standby replicates from nobody.
func (f *pgFailover) heal() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.healed || f.proxy == nil {
		return nil
	}
	f.healed = true
	_ = f.proxy.heal()
	f.proxy.close()
	return nil
}

// Close lets the holder go and puts the topology back: a killed primary
// is remade as a standby of the promoted one, from a fresh base backup;
// a standby whose link still goes through the proxy is pointed at its
// primary again.
func (f *pgFailover) Close() error {
	if f.check != nil {
		f.check.Close()
	}
	err := errors.Join(f.catcher.letGo(), f.heal())
	f.forget()
	if f.primary == nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), undoTimeout+time.Minute)
	defer cancel()
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.killed {
		// A promotion that failed in Inject is tried again: the old
		// primary is remade from the new one.
		if in, ierr := f.standby.InRecovery(ctx); ierr == nil && in {
			if perr := f.standby.Promote(ctx); perr != nil {
				return errors.Join(err, fmt.Errorf("failover: %w", perr))
			}
		}
		if rerr := f.target.PgRebuild(ctx, f.primary, f.standby); rerr != nil {
			return errors.Join(err, fmt.Errorf("failover: make %s a standby of %s again: %w", f.primary.Name(), f.standby.Name(), rerr))
		}
		f.killed = false
		return err
	}
	if rerr := f.standby.RouteReplication(ctx, f.primary, f.primary.Addr()); rerr != nil {
		err = errors.Join(err, fmt.Errorf("failover: point %s at %s again: %w", f.standby.Name(), f.primary.Name(), rerr))
	}
	return err
}

// pgLock is the Postgres failover's AppliesTo: a Postgres lock (a
// session's advisory lock, a claim row). Not the transactional strategies:
// their bank and the judge's tables are the database that fails over, so
// the commits it loses would read as never made, and each lock key's
// sequence in the store goes back; they are not judged under it yet.
func pgLock(info strategies.Info) bool {
	return info.Need.Backend == strategies.BackendPostgres && !info.Transactional
}

// pgFailoverApplies reports why the Postgres failover cannot run: not a
// Postgres lock, a store in the Postgres that fails over (the judge would
// fail over with it), or servers lockbench did not start.
func pgFailoverApplies(env *loadgen.FaultEnv, target servers.Target) error {
	if !pgLock(env.Info) {
		return fmt.Errorf("failover does not apply to %s", env.Strategy)
	}
	if env.Scenario.Store == loadgen.StorePostgres {
		return errors.New("failover: with --store postgres the judge's own tables would fail over with the lock; want --store memory")
	}
	if !target.PgReplicated() {
		if !target.Local() {
			return fmt.Errorf("failover: %w: the Postgres servers were given (%s); unset that to let lockbench start its own", servers.ErrNotLocal, target.Given())
		}
		return errors.New("failover needs a Postgres standby: --pg-topology replica")
	}
	return nil
}

// randomPgFailover is the Postgres failover with schedule=random: at
// random moments the primary of the moment is SIGKILLed and its standby
// promoted, nothing held back and no holder caught, and the old primary is
// made its standby again from a fresh base backup, ready for the next
// strike. What a strike loses is what replication had not yet carried
// when it struck.
type randomPgFailover struct {
	sched  schedule
	target servers.Target
}

var _ striker = (*randomPgFailover)(nil)

func (f *randomPgFailover) Name() string { return "failover" }

// Setup checks that the topology is lockbench's own and settled.
func (f *randomPgFailover) Setup(ctx context.Context, env *loadgen.FaultEnv) error {
	if err := pgFailoverApplies(env, f.target); err != nil {
		return err
	}
	if _, _, err := f.target.PgRoles(ctx); err != nil {
		return fmt.Errorf("failover: %w", err)
	}
	return nil
}

// Inject strikes at random moments until the load ends.
func (f *randomPgFailover) Inject(ctx context.Context, env *loadgen.FaultEnv) error {
	return inject(ctx, env, f.sched, f)
}

// strike kills the primary, promotes its standby and remakes the old
// primary as the new one's standby.
func (f *randomPgFailover) strike(ctx context.Context, env *loadgen.FaultEnv, _ *draws) error {
	primary, standby, err := f.target.PgRoles(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("failover: %w", err)
	}
	if err := primary.Kill(); err != nil {
		return fmt.Errorf("failover: kill %s: %w", primary.Name(), err)
	}
	at := time.Now()
	env.Begin(primary.Name() + " (the primary) killed")
	// Promoted even when the run has just ended: the topology must be
	// whole for the next run.
	uctx, cancel := undoCtx(ctx)
	defer cancel()
	if err := standby.Promote(uctx); err != nil {
		env.EndMissed(err.Error())
		return fmt.Errorf("failover: %w", err)
	}
	env.Event(fmt.Sprintf("%s promoted to primary (pg_promote), %s after the kill", standby.Name(), ms(time.Since(at))))
	if err := f.target.PgRebuild(uctx, primary, standby); err != nil {
		env.End(fmt.Sprintf("%s not remade as a standby: %v", primary.Name(), err))
		return fmt.Errorf("failover: make %s a standby of %s again: %w", primary.Name(), standby.Name(), err)
	}
	env.End(fmt.Sprintf("%s remade a standby of %s (a fresh base backup), %s after the kill", primary.Name(), standby.Name(), ms(time.Since(at))))
	return nil
}

// Close has nothing to put back: each strike leaves the topology whole.
func (f *randomPgFailover) Close() error { return nil }
