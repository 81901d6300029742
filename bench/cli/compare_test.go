package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// --fail-below takes a ratio; anything else is a usage error (exit 2,
// one line) before any server starts.
func TestCompareFailBelowFlag(t *testing.T) {
	for _, cmd := range []string{"compare-redis", "compare-postgres"} {
		for _, v := range []string{"-0.5", "3", "NaN", "half"} {
			var errb bytes.Buffer
			err := Run(context.Background(), []string{cmd, "--fail-below", v}, &bytes.Buffer{}, &errb)
			if code := ExitCode(err, &errb); code != 2 {
				t.Errorf("%s --fail-below %s: exit %d (%v); want 2", cmd, v, code, err)
			}
			if lines := strings.Split(strings.TrimSpace(errb.String()), "\n"); len(lines) != 1 || !strings.Contains(lines[0], "fail-below") {
				t.Errorf("%s --fail-below %s: stderr %q; want one line naming --fail-below", cmd, v, errb.String())
			}
		}
	}
}
