package cli

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
)

// Bad input gets exit 2 and one line naming the flag and what is accepted;
// never a panic, and no server is started for it.
func TestBadInput(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want string // the flag the line must name
	}{
		{"negative rate", []string{"run", "--rate", "-5"}, "-rate"},
		{"more deliveries than instances × workers", []string{"run", "--instances", "2", "--workers", "1", "--deliveries", "3"}, "--deliveries"},
		{"zero ttl", []string{"run", "--ttl", "0s"}, "-ttl"},
		{"unknown strategy", []string{"run", "--strategy", "meteor-lock"}, "--strategy"},
		{"malformed hold", []string{"run", "--hold", "uniform:5ms"}, "-hold"},
		{"malformed account dist", []string{"run", "--account-dist", "zipf:0.5"}, "-account-dist"},
		{"bad lock key", []string{"run", "--lock-key", "user"}, "-lock-key"},
		{"bad store", []string{"run", "--store", "mysql"}, "-store"},
		{"bad retry", []string{"run", "--retry", "forever"}, "-retry"},
		{"missing scenario file", []string{"run", "--scenario", "/nonexistent/x.yaml"}, "--scenario"},
		{"unknown fault", []string{"run", "--fault", "meteor"}, "--fault"},
		{"unknown flag", []string{"run", "--speed", "9"}, "-speed"},
		{"stray argument", []string{"run", "fast"}, "fast"},
		{"unknown command", []string{"launch"}, "launch"},
		{"zero compare rounds", []string{"compare-redis", "--rounds", "0"}, "--rounds"},
		{"too few compare requests", []string{"compare-redis", "--requests", "10"}, "--requests"},
		{"bad etcd members", []string{"run", "--etcd-members", "2", "--strategy", "nolock"}, "--etcd-members"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			err := Run(context.Background(), tc.args, &out, &errb)
			code := ExitCode(err, &errb)
			if code != 2 {
				t.Fatalf("exit code = %d (err %v); want 2", code, err)
			}
			lines := strings.Split(strings.TrimSpace(errb.String()), "\n")
			if len(lines) != 1 {
				t.Errorf("stderr has %d lines; want 1:\n%s", len(lines), errb.String())
			}
			if !strings.Contains(lines[0], tc.want) {
				t.Errorf("stderr = %q; want it to name %q", lines[0], tc.want)
			}
		})
	}
}

// A scenario file with an unknown key, or a bad value, is a usage error
// naming --scenario.
func TestBadScenarioFile(t *testing.T) {
	dir := t.TempDir()
	for _, body := range []string{"instances: 3\nspeed: 9\n", "hold: sometimes\n", "instances: [1\n"} {
		path := dir + "/s.yaml"
		if err := writeFile(path, body); err != nil {
			t.Fatal(err)
		}
		var errb bytes.Buffer
		code := ExitCode(Run(context.Background(), []string{"run", "--scenario", path}, &bytes.Buffer{}, &errb), &errb)
		if code != 2 || !strings.Contains(errb.String(), "--scenario") {
			t.Errorf("scenario %q: exit %d, stderr %q; want 2 naming --scenario", body, code, errb.String())
		}
	}
}

func writeFile(path, body string) error { return os.WriteFile(path, []byte(body), 0o644) }
