package conformance_test

import (
	"testing"

	"github.com/lockbench/lockbench/servers"
	"github.com/lockbench/lockbench/strategies"
	"github.com/lockbench/lockbench/strategies/conformance"
)

// A test of your own runs the suite on servers you already have, named by
// the LOCKBENCH_* environment variables. Without Nodes in Env the cases that
// stop servers are not run, and say so.
func ExampleRun() {
	testExistingServers := func(t *testing.T) {
		ep := servers.EndpointsFromEnv()
		conformance.Run(t, conformance.Env{
			Config: strategies.Config{
				RedisAddrs:    ep.RedisAddrs,
				RedisPassword: ep.RedisPassword,
				EtcdEndpoints: ep.EtcdEndpoints,
				PostgresDSN:   ep.PostgresDSN,
			},
			Strategies: []string{"setnx", "redlock"},
		})
	}
	_ = testExistingServers
}
