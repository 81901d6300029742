package servers

import (
	"github.com/lockbench/lockbench/strategies"
	"github.com/lockbench/lockbench/strategies/adapter"
)

// An adapter (package strategies/adapter, below this one) reaches its
// servers through the same LOCKBENCH_* variables `lockbench up` prints,
// and what it prints is redacted as the rest of lockbench's output.
func init() {
	adapter.EndpointEnv = func(c strategies.Config) []string { return EndpointsOf(c).Env() }
	adapter.Redact = Redact
}
