package conformance_test

import (
	"testing"

	"github.com/lockbench/lockbench/conformance"
	"github.com/lockbench/lockbench/servers"
)

// A test of your own runs the suite on servers you already have, named by
// the LOCKBENCH_* environment variables. Without a Cluster in Env the cases
// that stop servers are skipped, and say why.
func ExampleRun() {
	testExistingServers := func(t *testing.T) {
		conformance.Run(t, conformance.Env{
			Endpoints:  servers.EndpointsFromEnv(),
			Strategies: []string{"setnx", "redlock"},
		})
	}
	_ = testExistingServers
}
