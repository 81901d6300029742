// Package adapterenv wires the adapters (package strategies/adapter,
// below package servers) to the servers: an adapter reaches its servers
// through the same LOCKBENCH_* variables `lockbench up` prints, and what
// it prints is redacted as the rest of lockbench's output. Import it for
// its side effect where adapters run: the command layer, the conformance
// suite, the adapter's tests. (Package servers itself cannot: the
// strategies' tests import it, and the adapters import strategies.)
package adapterenv

import (
	"github.com/lockbench/lockbench/servers"
	"github.com/lockbench/lockbench/strategies"
	"github.com/lockbench/lockbench/strategies/adapter"
)

func init() {
	adapter.EndpointEnv = func(c strategies.Config) []string { return servers.EndpointsOf(c).Env() }
	adapter.Redact = servers.Redact
}
