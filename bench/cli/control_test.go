package cli

import (
	"strings"
	"testing"
)

// A control that comes out safe is said to be: a scenario that cannot show
// a missing lock (here, one delivery per payment, each its own key: no two
// holders ever share a lock; with no work in the critical sections and few
// payments, nolock's deliveries seldom overlap either). One that is
// caught, as with the default hold and two deliveries, is not warned about.
func TestControlSafeWarns(t *testing.T) {
	const warning = "the control nolock came out SAFE"
	stderr := runCommand(t, "run", "--strategy", "nolock", "--deliveries", "1", "--lock-key", "payment", "--payments", "20", "--out", t.TempDir())
	if !strings.Contains(stderr, warning) {
		t.Errorf("nolock without overlaps: stderr %q; want the warning %q", stderr, warning)
	}
	stderr = runCommand(t, "run", "--strategy", "nolock", "--payments", "200", "--out", t.TempDir())
	if strings.Contains(stderr, warning) {
		t.Errorf("nolock caught (default hold): stderr %q; want no warning", stderr)
	}
}
