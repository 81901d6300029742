package check

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNoLoadgen holds the second judge apart from the first: package
// check must not import loadgen or its store, even indirectly.
func TestNoLoadgen(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH to list the dependencies with")
	}
	out, err := exec.Command(goTool, "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.HasPrefix(dep, "github.com/lockbench/lockbench/loadgen") {
			t.Errorf("check depends on %s", dep)
		}
	}
}
