package faults

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/lockbench/lockbench/loadgen"
	"github.com/lockbench/lockbench/servers"
)

// randomFailover is failover with schedule=random: at random moments the
// primary of the moment is killed, the Sentinels promote a replica (forced
// after promote), and the old primary is started again as a replica of the
// new one. Nothing is held back and no holder is caught, so what a strike
// loses is what replication had not yet carried when it struck: the
// likelihood of the designed failover's outcome, not its proof.
type randomFailover struct {
	promote time.Duration
	sched   schedule
	target  servers.Target

	mu     sync.Mutex
	killed *servers.Member // killed and not started again
}

var _ striker = (*randomFailover)(nil)

func (f *randomFailover) Name() string { return "failover" }

// Setup checks that the group is lockbench's own and settled.
func (f *randomFailover) Setup(ctx context.Context, env *loadgen.FaultEnv) error {
	if err := failoverApplies(env, f.target); err != nil {
		return err
	}
	if _, _, err := f.target.Roles(ctx); err != nil {
		return fmt.Errorf("failover: %w", err)
	}
	return nil
}

// Inject strikes at random moments until the load ends.
func (f *randomFailover) Inject(ctx context.Context, env *loadgen.FaultEnv) error {
	return inject(ctx, env, f.sched, f)
}

// strike kills the current primary, waits for the promotion and starts the
// old primary again; Roles waits first for the group to settle after the
// previous strike.
func (f *randomFailover) strike(ctx context.Context, env *loadgen.FaultEnv, _ *draws) error {
	primary, _, err := f.target.Roles(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("failover: %w", err)
	}
	f.mu.Lock()
	err = primary.Node.Kill()
	if err == nil {
		f.killed = &primary
	}
	f.mu.Unlock()
	if err != nil {
		return fmt.Errorf("failover: kill %s: %w", primary.Node.Name(), err)
	}
	at := time.Now()
	env.Begin(primary.Node.Name() + " (the primary) killed")
	promoted, how, perr := awaitPromotion(ctx, f.target, primary.Addr, f.promote)
	if perr == nil {
		env.Event(fmt.Sprintf("%s promoted to primary %s, %s after the kill", promoted, how, ms(time.Since(at))))
	}
	if err := f.restart(ctx); err != nil {
		return errors.Join(perr, err)
	}
	switch {
	case perr == nil:
		env.End(fmt.Sprintf("%s started again: rejoined as a replica of %s", primary.Node.Name(), promoted))
	case ctx.Err() != nil:
		// The run ended before the Sentinels promoted anyone: the node
		// is back as the primary it was, and the strike was no failover.
		env.EndMissed(fmt.Sprintf("%s started again before a promotion (the run ended; %v)", primary.Node.Name(), perr))
	default:
		return fmt.Errorf("failover: %w", perr)
	}
	return nil
}

// restart starts the killed primary again, if any: the servers package
// starts a node of the group as a replica of the primary the Sentinels
// name.
func (f *randomFailover) restart(ctx context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.killed == nil {
		return nil
	}
	uctx, cancel := undoCtx(ctx)
	defer cancel()
	if err := f.killed.Node.Start(uctx); err != nil {
		return fmt.Errorf("failover: start %s again: %w", f.killed.Node.Name(), err)
	}
	f.killed = nil
	return nil
}

// Close starts the old primary again if a strike could not.
func (f *randomFailover) Close() error { return f.restart(context.Background()) }
