package cli

import (
	"os"
	"testing"

	"github.com/lockbench/lockbench/loadgen"
	"github.com/lockbench/lockbench/strategies/adapter/adaptertest"
	_ "github.com/lockbench/lockbench/strategies/all"
)

// TestMain lets instance processes (--instance-mode process re-executes the
// test binary) run as instances instead of as the tests.
func TestMain(m *testing.M) {
	loadgen.MaybeRunChild()
	adaptertest.Main() // the test binary as an adapter (adapter-check's tests)
	os.Exit(m.Run())
}
