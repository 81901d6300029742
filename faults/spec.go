package faults

import (
	"fmt"
	"sort"
	"strings"

	"github.com/lockbench/lockbench/internal/usage"
	"github.com/lockbench/lockbench/loadgen"
	"github.com/lockbench/lockbench/servers"
	"github.com/lockbench/lockbench/strategies"
)

// Spec is a parsed --fault value: NAME or NAME:key=value,key=value.
// The zero Spec is not valid; Parse("none") is the fault-free run.
type Spec struct {
	Name   string
	Params map[string]string
}

// Kind is one registered fault.
type Kind struct {
	Name        string
	Description string
	// Params documents the accepted parameters and their defaults.
	Params string
	// AppliesTo reports whether the fault means anything for a strategy
	// (kill-node does nothing to nolock).
	AppliesTo func(info strategies.Info) bool
	// Adjust changes the scenario the fault needs (pause needs instance
	// processes); it may return a usage error for a bad parameter.
	Adjust func(sc loadgen.Scenario, p map[string]string) (loadgen.Scenario, error)
	// Options are the server options the fault needs (clock-jump: faketime).
	Options servers.Options
	// NeedsLocal marks a fault that kills, restarts or moves the clock of a
	// server: it needs servers lockbench started itself.
	NeedsLocal bool
	// New builds the fault for one run on the servers the strategy uses
	// (target); with a zero target it only checks the parameters.
	New func(p map[string]string, target servers.Target) (loadgen.Fault, error)
}

var kinds = map[string]Kind{}

func register(k Kind) { kinds[k.Name] = k }

// Names lists the faults in the order of the README's fault table (none
// first, then from the process to the servers to the clock).
func Names() []string {
	order := []string{"none", "pause", "slow", "kill-node", "restart-node", "partition", "clock-jump", "failover"}
	var out []string
	for _, n := range order {
		if _, ok := kinds[n]; ok {
			out = append(out, n)
		}
	}
	var extra []string
	for n := range kinds {
		if !contains(order, n) {
			extra = append(extra, n)
		}
	}
	sort.Strings(extra)
	return append(out, extra...)
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// Lookup returns the fault kind called name.
func Lookup(name string) (Kind, bool) {
	k, ok := kinds[name]
	return k, ok
}

// Parse parses a --fault value.
func Parse(s string) (Spec, error) {
	name, rest, _ := strings.Cut(s, ":")
	k, ok := kinds[name]
	if !ok {
		return Spec{}, &usage.Error{Flag: "fault", Msg: fmt.Sprintf("unknown fault %q; want one of %s, optionally NAME:key=value,…", name, strings.Join(Names(), ", "))}
	}
	sp := Spec{Name: name, Params: map[string]string{}}
	if rest != "" {
		for _, kv := range strings.Split(rest, ",") {
			key, val, ok := strings.Cut(kv, "=")
			if !ok || key == "" {
				return Spec{}, &usage.Error{Flag: "fault", Msg: fmt.Sprintf("bad parameter %q for %s; want key=value (accepted: %s)", kv, name, k.Params)}
			}
			sp.Params[key] = val
		}
	}
	if k.New == nil && len(sp.Params) > 0 {
		return Spec{}, &usage.Error{Flag: "fault", Msg: fmt.Sprintf("%s takes no parameters", name)}
	}
	// Build once to validate the parameters.
	if k.New != nil {
		if _, err := k.New(sp.Params, servers.Target{}); err != nil {
			return Spec{}, err
		}
	}
	return sp, nil
}

// Adjust returns the scenario the fault needs.
func (s Spec) Adjust(sc loadgen.Scenario) (loadgen.Scenario, error) {
	k := kinds[s.Name]
	if k.Adjust == nil {
		return sc, nil
	}
	return k.Adjust(sc, s.Params)
}

// ServerOptions are the server options the fault needs.
func (s Spec) ServerOptions() servers.Options { return kinds[s.Name].Options }

// AppliesTo reports whether the fault means anything for the strategy.
func (s Spec) AppliesTo(info strategies.Info) bool {
	k := kinds[s.Name]
	return k.AppliesTo == nil || k.AppliesTo(info)
}

// NeedsLocal reports whether the fault acts on servers lockbench started
// itself (kill-node, restart-node, clock-jump).
func (s Spec) NeedsLocal() bool { return kinds[s.Name].NeedsLocal }

// New builds the fault for one run on the servers the strategy uses; nil
// for none (and for the zero Spec).
func (s Spec) New(target servers.Target) (loadgen.Fault, error) {
	k := kinds[s.Name]
	if k.New == nil {
		return nil, nil
	}
	return k.New(s.Params, target)
}

func init() {
	register(Kind{Name: "none", Description: "no fault"})
}
