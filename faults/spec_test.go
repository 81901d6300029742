package faults_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lockbench/lockbench/faults"
	"github.com/lockbench/lockbench/internal/usage"
	"github.com/lockbench/lockbench/loadgen"
	"github.com/lockbench/lockbench/servers"
	"github.com/lockbench/lockbench/strategies"
)

// Every fault of the README's fault table is registered, in its order.
func TestNames(t *testing.T) {
	want := "none pause slow kill-node restart-node partition clock-jump failover"
	if got := strings.Join(faults.Names(), " "); got != want {
		t.Errorf("Names() = %q; want %q", got, want)
	}
}

// Parse accepts NAME and NAME:key=value,… and names the flag and what is
// accepted when it refuses.
func TestParse(t *testing.T) {
	cases := []struct {
		in      string
		wantErr string // "" for success
	}{
		{"none", ""},
		{"pause", ""},
		{"pause:for=3s,instance=1,at=0.5", ""},
		{"slow:for=2s", ""},
		{"kill-node:node=2,down=1s", ""},
		{"restart-node:node=2,hold=300ms,split=off", ""},
		{"partition:mode=delay,delay=50ms,for=1s", ""},
		{"clock-jump:jump=5s", ""},
		// Every fault takes a random schedule, and its duration a range.
		{"pause:schedule=random,every=1s,for=1500ms-3s", ""},
		{"kill-node:schedule=random,every=2s,down=300ms-800ms", ""},
		{"partition:mode=reset,schedule=random,for=100ms-200ms,hold=600ms-900ms", ""},
		{"restart-node:schedule=random,hold=100ms-400ms", ""},
		{"slow:schedule=designed,at=0.5", ""},
		// The schedule is one of two; every is a duration > 0, for
		// schedule=random only; at is for the designed strike only.
		{"pause:schedule=sometimes", "bad schedule"},
		{"pause:schedule=random,every=0", "bad every"},
		{"pause:every=1s", `unknown parameter "every"`},
		{"pause:schedule=random,at=0.5", `unknown parameter "at"`},
		// A range runs from its minimum up.
		{"kill-node:down=5s-1s", "bad down"},
		{"partition:for=0s-1s", "bad for"},
		// An unknown fault lists the known ones.
		{"meteor", "unknown fault"},
		// A misspelt parameter is named, with the accepted ones.
		{"pause:fro=3s", `unknown parameter "fro"`},
		// Values are checked.
		{"pause:for=-1s", "bad for"},
		{"kill-node:down=soon", "bad down"},
		{"partition:mode=flaky", "bad mode"},
		{"restart-node:split=maybe", "bad split"},
		{"pause:at=1.5", "bad at"},
		{"kill-node:node=-1", "bad node"},
		// jump belongs to clock-jump only.
		{"restart-node:jump=3s", `unknown parameter "jump"`},
		// none takes nothing.
		{"none:x=1", "takes no parameters"},
		// A parameter without =.
		{"pause:3s", "want key=value"},
	}
	for _, tc := range cases {
		_, err := faults.Parse(tc.in)
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("Parse(%q) = %v; want no error", tc.in, err)
		case tc.wantErr != "" && err == nil:
			t.Errorf("Parse(%q) = nil; want an error containing %q", tc.in, tc.wantErr)
		case tc.wantErr != "":
			var ue *usage.Error
			if !errors.As(err, &ue) || ue.Flag != "fault" {
				t.Errorf("Parse(%q) = %v; want a *usage.Error on --fault", tc.in, err)
			}
			if !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Parse(%q) = %q; want it to contain %q", tc.in, err, tc.wantErr)
			}
		}
	}
}

// Adjust gives each fault the scenario it needs, and refuses parameters
// that cannot work with the scenario.
func TestAdjust(t *testing.T) {
	base := loadgen.DefaultScenario()
	base.InstanceMode = "goroutine"
	base.TTL = time.Second
	cases := []struct {
		fault    string
		wantMode loadgen.InstanceMode
		wantErr  string
	}{
		// pause stops a process: the instances must be processes.
		{"pause", "process", ""},
		// slow reaches goroutines and processes alike: the mode is left
		// as given.
		{"slow", "goroutine", ""},
		{"kill-node", "goroutine", ""},
		// A pause shorter than the TTL would not outlast the lock.
		{"pause:for=500ms", "", "must exceed the TTL"},
		{"slow:for=1s", "", "must exceed the TTL"},
		// The holder must still be within its validity when the node fails.
		{"restart-node:hold=1s", "", "shorter than the TTL"},
		{"clock-jump:hold=2s", "", "shorter than the TTL"},
		// An instance the run does not have.
		{"pause:instance=3", "", "instance=3"},
	}
	for _, tc := range cases {
		spec, err := faults.Parse(tc.fault)
		if err != nil {
			t.Fatalf("Parse(%q): %v", tc.fault, err)
		}
		got, err := spec.Adjust(base)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Adjust(%s) = %v; want an error containing %q", tc.fault, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("Adjust(%s): %v", tc.fault, err)
			continue
		}
		if got.InstanceMode != tc.wantMode {
			t.Errorf("Adjust(%s).InstanceMode = %q; want %q", tc.fault, got.InstanceMode, tc.wantMode)
		}
	}
}

// Faults apply where they mean something: node faults need a server,
// restart-node and clock-jump a Redis one.
func TestAppliesTo(t *testing.T) {
	infos := map[string]strategies.Info{
		"nolock":  {Name: "nolock"},
		"setnx":   {Name: "setnx", Need: strategies.Need{Backend: strategies.BackendRedis, Nodes: 1}},
		"redlock": {Name: "redlock", Need: strategies.Need{Backend: strategies.BackendRedis, Nodes: 5}},
		"etcd":    {Name: "etcd", Need: strategies.Need{Backend: strategies.BackendEtcd}, Fencing: true},
		"pg":      {Name: "pg-onconflict", Need: strategies.Need{Backend: strategies.BackendPostgres, Nodes: 1}, Fencing: true},
	}
	want := map[string]string{ // fault: the strategies it applies to
		"none":         "nolock setnx redlock etcd pg",
		"pause":        "setnx redlock etcd pg",
		"slow":         "setnx redlock etcd pg",
		"kill-node":    "setnx redlock etcd pg",
		"restart-node": "setnx redlock",
		"partition":    "setnx redlock etcd pg",
		"clock-jump":   "setnx redlock",
	}
	for fault, w := range want {
		spec, err := faults.Parse(fault)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, name := range []string{"nolock", "setnx", "redlock", "etcd", "pg"} {
			if spec.AppliesTo(infos[name]) {
				got = append(got, name)
			}
		}
		if strings.Join(got, " ") != w {
			t.Errorf("%s applies to %q; want %q", fault, strings.Join(got, " "), w)
		}
	}
}

// --fault none builds no fault, and clock-jump asks for faketime servers.
func TestNewAndOptions(t *testing.T) {
	spec, _ := faults.Parse("none")
	if f, err := spec.New(servers.Target{}); f != nil || err != nil {
		t.Errorf("none: New() = %v, %v; want nil, nil", f, err)
	}
	if spec.ServerOptions().Faketime {
		t.Errorf("none asks for faketime servers; want nothing changed")
	}
	cj, _ := faults.Parse("clock-jump")
	if !cj.ServerOptions().Faketime {
		t.Errorf("clock-jump does not ask for faketime servers")
	}
}

// Faults that act on a server refuse, with ErrNeedsLocalServers, servers
// lockbench did not start.
func TestNeedsLocalServers(t *testing.T) {
	setnx := strategies.Info{Name: "setnx", Need: strategies.Need{Backend: strategies.BackendRedis, Nodes: 1}}
	etcd := strategies.Info{Name: "etcd", Need: strategies.Need{Backend: strategies.BackendEtcd}}
	cases := []struct {
		fault string
		info  strategies.Info
	}{
		{"kill-node", setnx},
		{"kill-node", etcd},
		{"restart-node", setnx},
		{"clock-jump", setnx},
	}
	for _, tc := range cases {
		spec, _ := faults.Parse(tc.fault)
		given := servers.Endpoints{RedisAddrs: []string{"127.0.0.1:1"}, EtcdEndpoints: []string{"http://127.0.0.1:1"}}
		target, err := servers.TargetFor(tc.info.Need, given, nil)
		if err != nil {
			t.Fatal(err)
		}
		f, err := spec.New(target)
		if err != nil {
			t.Fatal(err)
		}
		sc := loadgen.DefaultScenario()
		env := &loadgen.FaultEnv{Strategy: tc.info.Name, Info: tc.info, Scenario: sc, Lock: target.Config}
		err = f.Setup(context.Background(), env)
		if !errors.Is(err, faults.ErrNeedsLocalServers) {
			t.Errorf("%s on %s with given servers: Setup = %v; want ErrNeedsLocalServers", tc.fault, tc.info.Name, err)
		}
		_ = f.Close()
	}
}
