package agent

import (
	"context"
	"net"

	"github.com/lockbench/lockbench/loadgen"
	"github.com/lockbench/lockbench/loadgen/store"
)

var (
	_ loadgen.Spawner = (*Pool)(nil)
	_ loadgen.Proc    = (*Instance)(nil)
)

// Place serves st to one run's instances on the agents, on the addresses
// Listen picks, to clients presenting the pool's token only, until the
// placement is closed.
func (p *Pool) Place(st store.Store, o store.ServeOptions) (loadgen.Placement, error) {
	lns, addrs, err := p.Listen()
	if err != nil {
		return nil, err
	}
	o.Token = p.cfg.Token
	for _, ln := range lns {
		go func() { _ = store.ServeWith(ln, st, o) }()
	}
	return &placement{p: p, lns: lns, addrs: addrs}, nil
}

// placement is one run's: its store listeners and where each agent's
// instances reach them.
type placement struct {
	p     *Pool
	lns   []net.Listener
	addrs StoreAddrs
}

// Spawn starts instance id of n on its agent (round robin), with its
// share of the agent's cores.
func (pl *placement) Spawn(ctx context.Context, id, n int, conf func(storeAddr string) ([]byte, error)) (loadgen.Proc, error) {
	c, share := pl.p.pick(id, n)
	b, err := conf(pl.addrs[c])
	if err != nil {
		return nil, err
	}
	return c.Spawn(ctx, b, loadgen.ProcsFor(c.CPUs(), share))
}

// Close stops serving the store.
func (pl *placement) Close() error {
	closeAll(pl.lns)
	return nil
}
