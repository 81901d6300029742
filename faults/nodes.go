package faults

import (
	"fmt"

	"github.com/lockbench/lockbench/loadgen"
	"github.com/lockbench/lockbench/servers"
	"github.com/lockbench/lockbench/strategies"
)

// ErrNeedsLocalServers is returned by Setup of a fault that kills, restarts
// or moves the clock of a server, when the run uses servers lockbench did not
// start (given by flags or LOCKBENCH_* variables).
var ErrNeedsLocalServers = servers.ErrNotLocal

// serverNode returns the i-th server the strategy uses (target), which the
// fault will kill or restart.
func serverNode(fault string, env *loadgen.FaultEnv, target servers.Target, i int) (servers.Node, error) {
	if target.Need.Backend == strategies.BackendNone {
		return nil, fmt.Errorf("%s: %s has no server to act on", fault, env.Strategy)
	}
	// The Postgres store lives on the strategy's Postgres server.
	if env.Scenario.Store == loadgen.StorePostgres && target.Need.Backend == strategies.BackendPostgres {
		return nil, fmt.Errorf("%s: with --store postgres the store lives on the Postgres server too; killing it would end the run (use --store memory)", fault)
	}
	n, err := target.Node(i)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", fault, err)
	}
	return n, nil
}

// forgets reports whether a killed and restarted n comes back empty.
func forgets(n servers.Node) bool {
	v, ok := n.(servers.Volatile)
	return ok && v.Volatile()
}
