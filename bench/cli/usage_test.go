package cli

import (
	"bytes"
	"context"
	"io"
	"os"
	"strings"
	"testing"
)

// Bad input gets exit 2 and one line naming the flag and what is accepted;
// never a panic, and no server is started for it. Every case is refused
// before anything starts (the inputs of the "no crash on any input" issue
// among them), so none needs a server.
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
		{"comma in exec arguments", []string{"run", "--strategy", "exec:/bin/true a,b"}, "a comma separates strategies"},
		{"malformed hold", []string{"run", "--hold", "uniform:5ms"}, "-hold"},
		{"malformed account dist", []string{"run", "--account-dist", "zipf:0.5"}, "-account-dist"},
		{"bad lock key", []string{"run", "--lock-key", "user"}, "-lock-key"},
		{"bad store", []string{"run", "--store", "mysql"}, "-store"},
		{"bad retry", []string{"run", "--retry", "forever"}, "-retry"},
		{"missing scenario file", []string{"run", "--scenario", "/nonexistent/x.yaml"}, "--scenario"},
		{"unknown fault", []string{"run", "--fault", "meteor"}, "--fault"},
		{"fault every zero", []string{"run", "--fault", "pause:schedule=random,every=0"}, "bad every"},
		{"fault range backwards", []string{"verdicts", "--fault", "kill-node:down=5s-1s"}, "bad down"},
		{"fault at not a number", []string{"run", "--fault", "pause:at=NaN"}, "bad at"},
		{"fault for beyond an hour", []string{"run", "--fault", "pause:for=2h"}, "bad for"},
		{"fault down range beyond an hour", []string{"run", "--fault", "kill-node:down=1s-90m"}, "bad down"},
		{"compare threshold not a number", []string{"compare", "--fail-on-regression", "NaN", ".", "."}, "-fail-on-regression"},
		{"redis wait beyond any deployment", []string{"run", "--redis-topology", "sentinel", "--redis-wait", "1000"}, "-redis-wait"},
		{"redis wait timeout of a day", []string{"run", "--redis-topology", "sentinel", "--redis-wait", "1", "--redis-wait-timeout", "24h"}, "-redis-wait-timeout"},
		{"pg sync without a standby", []string{"run", "--pg-sync", "on"}, "--pg-sync"},
		{"pg sync not a word", []string{"verdicts", "--pg-topology", "replica", "--pg-sync", "yes"}, "--pg-sync"},
		{"pg topology unknown", []string{"matrix", "--pg-topology", "cluster"}, "--pg-topology"},
		{"up pg sync without a standby", []string{"up", "--pg-sync", "on"}, "--pg-sync"},
		{"fault schedule unknown", []string{"run", "--fault", "none", "--fault", "pause:schedule=sometimes"}, "bad schedule"},
		{"unknown flag", []string{"run", "--speed", "9"}, "-speed"},
		{"stray argument", []string{"run", "fast"}, "fast"},
		{"unknown command", []string{"launch"}, "launch"},
		{"zero compare rounds", []string{"compare-redis", "--rounds", "0"}, "--rounds"},
		{"too few compare requests", []string{"compare-redis", "--requests", "10"}, "--requests"},
		{"bad etcd members", []string{"run", "--etcd-members", "2", "--strategy", "nolock"}, "--etcd-members"},

		// Memory: two billion accounts would be 400 GB; refused with the
		// estimate and what is available, not an out-of-memory crash.
		{"accounts beyond memory", []string{"run", "--strategy", "setnx", "--accounts", "2000000000", "--payments", "10"}, "--accounts: the scenario needs about"},
		// More accounts than an account number holds.
		{"accounts beyond int32", []string{"run", "--strategy", "setnx", "--accounts", "100000000000", "--payments", "10"}, "--accounts: want 1..2147483647"},
		// A list of nothing runs nothing: refused.
		{"strategy list of nothing", []string{"run", "--strategy", ",", "--payments", "10"}, "--strategy: empty item"},
		{"strategy list with a hole", []string{"run", "--strategy", "setnx,,etcd"}, "--strategy: empty item"},
		{"strategy twice", []string{"run", "--strategy", "setnx,setnx"}, "--strategy"},
		{"verdicts fault list of nothing", []string{"verdicts", "--fault", ","}, "--fault: empty item"},
		{"matrix strategy list of nothing", []string{"matrix", "--strategy", ",", "--dry-run"}, "--strategy: empty item"},
		{"plan strategy list of nothing", []string{"plan", "--strategy", ","}, "--strategy: empty item"},
		{"redis addrs with a trailing comma", []string{"run", "--strategy", "setnx", "--redis-addrs", "127.0.0.1:6379,"}, "--redis-addrs: empty item"},
		{"redis addr without a port", []string{"run", "--strategy", "setnx", "--redis-addrs", "localhost"}, "--redis-addrs"},
		{"etcd endpoints of nothing", []string{"run", "--strategy", "etcd", "--etcd-endpoints", ","}, "--etcd-endpoints: empty item"},
		{"etcd endpoint of another scheme", []string{"run", "--strategy", "etcd", "--etcd-endpoints", "ftp://x:1"}, "--etcd-endpoints"},
		{"zk server port out of range", []string{"run", "--strategy", "zookeeper", "--zk-servers", "127.0.0.1:70000"}, "--zk-servers"},
		{"pg dsn unparsable", []string{"run", "--strategy", "pg-onconflict", "--pg-dsn", "postgres://u:secret@h:notaport/db"}, "--pg-dsn"},
		// Below the strategies' 1ms resolution: refused up front, not by
		// the first instance once the servers are up.
		{"ttl below resolution", []string{"run", "--strategy", "setnx", "--ttl", "1ns"}, "--ttl: want a duration in 1ms.."},
		{"ttl too long", []string{"run", "--ttl", "48h"}, "--ttl"},
		{"acquire timeout too long", []string{"run", "--acquire-timeout", "2h"}, "--acquire-timeout"},
		// NaN passes every comparison; it must not pass the ranges.
		{"rate NaN", []string{"run", "--rate", "NaN"}, "--rate"},
		{"rate infinite", []string{"run", "--rate", "+Inf", "--duration", "1s", "--payments", "0"}, "--rate"},
		{"rate too high", []string{"run", "--rate", "1e9"}, "--rate"},
		{"rate × duration too many payments", []string{"run", "--rate", "1000000", "--duration", "24h"}, "--rate"},
		{"payments ÷ rate longer than a day", []string{"run", "--rate", "0.001", "--payments", "1000"}, "--rate"},
		{"funding NaN", []string{"run", "--funding", "NaN"}, "--funding"},
		{"zipf NaN", []string{"run", "--account-dist", "zipf:NaN"}, "--account-dist"},
		{"hot infinite", []string{"run", "--account-dist", "hot:Inf"}, "-account-dist"},
		{"hold too long", []string{"run", "--hold", "2h"}, "--hold"},
		{"exp hold mean too long", []string{"run", "--hold", "exp:2562047h"}, "--hold"},
		{"retry backoff below 1µs", []string{"run", "--retry", "backoff:1ns-1ms"}, "-retry"},
		{"duration too long", []string{"run", "--duration", "48h"}, "--duration"},
		{"warmup too long", []string{"run", "--warmup", "2h"}, "--warmup"},
		{"payments too many", []string{"run", "--payments", "1000000000"}, "--payments"},
		{"payments negative", []string{"run", "--payments", "-1"}, "--payments"},
		{"workers too many", []string{"run", "--workers", "5000"}, "--workers"},
		{"instances × workers too many", []string{"run", "--instances", "256", "--workers", "4096"}, "--workers"},
		{"instances zero", []string{"run", "--instances", "0"}, "--instances"},
		{"deliveries zero", []string{"run", "--deliveries", "0"}, "--deliveries"},
		{"interval too long", []string{"run", "--interval", "2m"}, "-interval"},
		// A day's run at 10ms intervals keeps 8.6 million of them.
		{"intervals beyond memory", []string{"run", "--duration", "24h", "--interval", "10ms", "--payments", "0"}, "--duration: the scenario needs about"},
		{"name with a newline", []string{"run", "--name", "a\nb"}, "--name"},
		{"seed beyond 64 bits", []string{"run", "--seed", "99999999999999999999"}, "-seed"},
		{"flag name with a newline", []string{"run", "--bad\nflag"}, "-bad flag"},
		// Files that are not scenarios: a device that never ends, a
		// directory.
		{"scenario from /dev/zero", []string{"run", "--scenario", "/dev/zero"}, "--scenario"},
		{"scenario a directory", []string{"run", "--scenario", "."}, "--scenario"},
		{"trials zero", []string{"verdicts", "--trials", "0"}, "-trials"},
		{"plan target NaN", []string{"plan", "--target-rate", "NaN"}, "-target-rate"},
		{"plan max rate too high", []string{"plan", "--max-rate", "1e9"}, "-max-rate"},
		{"plan slo too long", []string{"plan", "--slo-p99", "1h"}, "-slo-p99"},
		{"plan step too long", []string{"plan", "--step-duration", "2h"}, "--step-duration"},
		{"plan warmup too long", []string{"plan", "--step-warmup", "1h"}, "--step-warmup"},
		{"compare requests too many", []string{"compare-redis", "--requests", "100000000"}, "--requests"},
		{"compare clients zero", []string{"compare-redis", "--clients", "0"}, "--clients"},
		{"up redis too many", []string{"up", "--redis", "33"}, "--redis"},
		{"report dir with a newline", []string{"report", "a\nb"}, "report"},
		{"metrics port out of range", []string{"run", "--metrics-addr", "localhost:99999"}, "-metrics-addr"},
		// --store-transport: sync or sequenced, and sequenced only for
		// local instance processes.
		{"store transport unknown", []string{"run", "--store-transport", "carrier-pigeon"}, "-store-transport"},
		{"verdicts store transport unknown", []string{"verdicts", "--store-transport", "async"}, "-store-transport"},
		{"matrix store transport unknown", []string{"matrix", "--store-transport", "", "--dry-run"}, "-store-transport"},
		{"plan store transport unknown", []string{"plan", "--store-transport", "Sync"}, "-store-transport"},
		{"sequenced without processes", []string{"run", "--store-transport", "sequenced"}, "--store-transport: sequenced needs instance processes"},
		{"sequenced with goroutines", []string{"run", "--instance-mode", "goroutine", "--fault", "pause", "--store-transport", "sequenced"}, "--store-transport: sequenced needs instance processes"},
		{"sequenced with a goroutine cell", []string{"run", "--fault", "none", "--fault", "pause", "--store-transport", "sequenced"}, "--store-transport: sequenced needs instance processes"},
		{"plan sequenced without processes", []string{"plan", "--store-transport", "sequenced"}, "--store-transport: sequenced needs instance processes"},
		{"verdicts sequenced without process cells", []string{"verdicts", "--fault", "none", "--store-transport", "sequenced"}, "--store-transport: sequenced needs instance processes"},
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
	for _, body := range []string{"instances: 3\nspeed: 9\n", "hold: sometimes\n", "instances: [1\n", "accounts: 99999999999999999999999\n", "retry: backoff:1ns-1ms\n"} {
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

// A scenario file's values have the flags' ranges: out of range, the
// line names the flag of the key.
func TestScenarioFileRanges(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		body, want string
	}{
		{"ttl: 1ns\n", "--ttl"},
		{"rate: .nan\n", "--rate"},
		{"funding: .inf\n", "--funding"},
		{"instances: -1\n", "--instances"},
		{"duration: -5s\n", "--duration"},
		{"variant: \"a\\u0007b\"\n", "--variant"},
		{"accounts: 2000000000\npayments: 10\n", "--accounts: the scenario needs about"},
	}
	for _, tc := range cases {
		path := dir + "/s.yaml"
		if err := writeFile(path, tc.body); err != nil {
			t.Fatal(err)
		}
		var errb bytes.Buffer
		code := ExitCode(Run(context.Background(), []string{"run", "--scenario", path}, &bytes.Buffer{}, &errb), &errb)
		if line := strings.TrimSpace(errb.String()); code != 2 || strings.Contains(line, "\n") || !strings.Contains(line, tc.want) {
			t.Errorf("scenario %q: exit %d, stderr %q; want 2 and one line naming %q", tc.body, code, errb.String(), tc.want)
		}
	}
}

// A command cut short by Ctrl-C exits 130, whichever it is (here before
// its first run finished, so it has nothing to keep). The commands that
// keep results say on stderr that there are none.
func TestInterruptedExits130(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want string // a line stderr must have; "" for any
	}{
		{"run", []string{"run", "--strategy", "nolock", "--payments", "10"}, "interrupted before a run finished: no results kept"},
		{"verdicts", []string{"verdicts", "--strategy", "nolock", "--fault", "none"}, "interrupted before a run finished: no results kept"},
		{"matrix", []string{"matrix", "--quick", "--strategy", "nolock", "--fault", "none"}, ""},
		{"plan", []string{"plan", "--strategy", "nolock", "--target-rate", "100"}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			var errb bytes.Buffer
			err := Run(ctx, append(tc.args, "--out", t.TempDir()+"/out"), io.Discard, &errb)
			if code := ExitCode(err, &errb); code != 130 {
				t.Fatalf("exit code = %d (err %v); want 130", code, err)
			}
			if tc.want != "" && !strings.Contains(errb.String(), tc.want) {
				t.Errorf("stderr = %q; want the line %q", errb.String(), tc.want)
			}
		})
	}
}

func writeFile(path, body string) error { return os.WriteFile(path, []byte(body), 0o644) }
