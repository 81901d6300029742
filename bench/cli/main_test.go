package cli

import (
	"os"
	"testing"

	"github.com/lockbench/lockbench/loadgen"
	_ "github.com/lockbench/lockbench/strategies/all"
)

// TestMain lets instance processes (--instance-mode process re-executes the
// test binary) run as instances instead of as the tests.
func TestMain(m *testing.M) {
	loadgen.MaybeRunChild()
	os.Exit(m.Run())
}
