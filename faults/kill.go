package faults

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/lockbench/lockbench/loadgen"
	"github.com/lockbench/lockbench/servers"
	"github.com/lockbench/lockbench/strategies"
)

// DefaultDown is how long kill-node keeps the node down: 3 seconds.
const DefaultDown = 3 * time.Second

func init() {
	register(Kind{
		Name: "kill-node",
		Description: "SIGKILL one server mid-run (a Redis node, an etcd member, Postgres, a ZooKeeper or NATS server) and start it again after a while; " +
			"a Redis node comes back empty, a NATS server without its JetStream store",
		Params: "node=N (default 0: the node single-node strategies use), down=D or MIN-MAX (default 3s), " + scheduleParams,
		// Killing the Postgres server of a transactional strategy kills its
		// store too, which ends the run rather than testing the strategy.
		AppliesTo:  func(info strategies.Info) bool { return hasServer(info) && !info.Transactional },
		NeedsLocal: true,
		New: func(p map[string]string, target servers.Target) (loadgen.Fault, error) {
			ps := newParams("kill-node", p)
			k := &kill{
				target: target,
				index:  ps.index("node", 0),
				down:   ps.span("down", fixed(DefaultDown)),
				sched:  ps.schedule(),
			}
			return k, ps.done()
		},
	})
}

// kill takes one server down for a while.
type kill struct {
	index int
	down  span
	sched schedule

	target servers.Target
	node   servers.Node

	mu   sync.Mutex
	dead bool // killed and not started again
}

var _ striker = (*kill)(nil)

func (k *kill) Name() string { return "kill-node" }

// Setup finds the server.
func (k *kill) Setup(_ context.Context, env *loadgen.FaultEnv) error {
	n, err := serverNode("kill-node", env, k.target, k.index)
	k.node = n
	return err
}

// Inject strikes on the fault's schedule.
func (k *kill) Inject(ctx context.Context, env *loadgen.FaultEnv) error {
	return inject(ctx, env, k.sched, k)
}

// strike kills the server and starts it again after a drawn down= (at once
// when ctx ends first).
func (k *kill) strike(ctx context.Context, env *loadgen.FaultEnv, d *draws) error {
	down := d.of(k.down)
	k.mu.Lock()
	err := k.node.Kill()
	k.dead = err == nil
	k.mu.Unlock()
	if err != nil {
		return fmt.Errorf("kill %s: %w", k.node.Name(), err)
	}
	env.Begin(k.node.Name() + " killed")
	strategies.Sleep(ctx, down)
	start := time.Now()
	if err := k.revive(ctx); err != nil {
		return err
	}
	what := " started again"
	if forgets(k.node) {
		what += " (empty: no persistence)"
	}
	env.End(fmt.Sprintf("%s%s, in %s", k.node.Name(), what, ms(time.Since(start))))
	return nil
}

// revive starts the server if it is dead.
func (k *kill) revive(ctx context.Context) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if !k.dead {
		return nil
	}
	uctx, cancel := undoCtx(ctx)
	defer cancel()
	if err := k.node.Start(uctx); err != nil {
		return fmt.Errorf("start %s again: %w", k.node.Name(), err)
	}
	k.dead = false
	return nil
}

// Close starts the server again if Inject could not.
func (k *kill) Close() error { return k.revive(context.Background()) }
