// The verdict experiments: which cells the verdict table has (strategies
// × faults × the store's fencing check, and the variants beside them), and
// the scenario and fault parameters each cell runs with. Running them is
// verdicts_run.go; printing them, verdicts_table.go.

package cli

import (
	"fmt"
	"strings"
	"time"

	"github.com/lockbench/lockbench/faults"
	"github.com/lockbench/lockbench/loadgen"
	"github.com/lockbench/lockbench/servers"
	"github.com/lockbench/lockbench/strategies"
)

// The verdict scenario: small enough that the whole table takes a few
// minutes on two cores, contended enough that every fault meets a holder
// and a contender. Two instances each get every payment (the "same
// request lands on two instances"); the TTL is short so that pause and slow
// outlast it quickly.
const (
	verdictInstances = 2
	verdictWorkers   = 4
	verdictAccounts  = 10
	verdictHold      = "5ms"
	verdictTTL       = time.Second
	verdictRate      = 100 // payments per second, open loop
	// verdictPayments is 3.5 s of load: the fault strikes at 30% (about
	// 1 s in) and a node fault (1.5 s) is over a second before the end.
	verdictPayments = 350
	// verdictRandomPayments is the longer run of a random fault schedule
	// (schedule=random): 10 s, several strikes at every=1s.
	verdictRandomPayments = 1000
	// verdictBaseline is the shorter fault-free run: 1.5 s.
	verdictBaseline = 150
	// verdictFaultLength is how long kill-node and partition last, instead
	// of their 3 s default.
	verdictFaultLength = "1500ms"
)

// verdictFaultSpec is the --fault value each fault runs with in the table.
func verdictFaultSpec(name string) string {
	switch name {
	case "kill-node":
		return name + ":down=" + verdictFaultLength
	case "partition":
		return name + ":for=" + verdictFaultLength
	}
	return name
}

// verdictScenario is the scenario of one cell, before the fault adjusts it.
func verdictScenario(fault string, fencing bool) loadgen.Scenario {
	sc := loadgen.DefaultScenario()
	sc.Name = "verdicts"
	sc.Instances, sc.Deliveries, sc.Workers = verdictInstances, verdictInstances, verdictWorkers
	sc.Accounts = verdictAccounts
	sc.Hold, _ = loadgen.ParseHold(verdictHold)
	sc.TTL = verdictTTL
	sc.Rate = verdictRate
	sc.Payments = verdictPayments
	if fault == "none" {
		sc.Payments = verdictBaseline
	}
	sc.Fencing = fencing
	if fault != "none" {
		sc.Interval = loadgen.FaultInterval
	}
	return sc
}

// cell is one cell of a command, run --trials times: a strategy through a
// scenario under a fault (the zero Spec: none). run, verdicts, the matrix
// and plan all run cells.
type cell struct {
	info strategies.Info
	spec faults.Spec
	sc   loadgen.Scenario
	// wait is the cell's --redis-wait (0: none), pgSync its --pg-sync on;
	// the session applies them.
	wait   int
	pgSync bool
	// what is the part of the matrix the cell belongs to ("base",
	// "contention"), for its progress line; "" elsewhere.
	what string
}

// cellServers are the servers and server options the cells need: one
// answer for every command.
func cellServers(cells []cell) (servers.Needs, servers.Options) {
	var need servers.Needs
	var opts servers.Options
	for _, c := range cells {
		need.Merge(needs([]strategies.Info{c.info}, c.sc))
		opts.Faketime = opts.Faketime || c.spec.ServerOptions().Faketime
	}
	return need, opts
}

func (c cell) label() string {
	name := c.info.Name
	if v := c.variant(); v != "" {
		name += " [" + v + "]"
	}
	fault := c.spec.Name
	if fault == "" {
		fault = "none"
	}
	return fmt.Sprintf("%s × %s (fencing %s)", name, fault, onOff(c.sc.Fencing && c.info.Fencing))
}

// variant is the cell's variant as label shows it: the scenario's, and the
// WAIT and strict fencing the cell adds (the session labels its runs the
// same way).
func (c cell) variant() string {
	var parts []string
	if c.sc.Variant != "" {
		parts = append(parts, c.sc.Variant)
	}
	if c.wait > 0 {
		parts = append(parts, fmt.Sprintf("wait=%d", c.wait))
	}
	if c.pgSync && c.info.Need.Backend == strategies.BackendPostgres {
		parts = append(parts, "sync=on")
	}
	if c.sc.FencingStrict {
		parts = append(parts, "fencing=strict")
	}
	return strings.Join(parts, ",")
}

// variantCases adds to the cells of verdictCases the variants the rules
// under test ask for: for every cell of a fenced strategy with the store's
// check on, the same with the strict rule (a token handed out twice is
// refused too), side by side; with wait above 0, every cell of a
// single-node Redis strategy again with WAIT (--redis-wait), and with
// pgSync every cell of a Postgres strategy again with a synchronous
// standby (--pg-sync on), so that what they buy and what they cost show
// side by side too.
func variantCases(cases []cell, wait int, pgSync bool) []cell {
	var out []cell
	for _, c := range cases {
		group := []cell{c}
		if c.info.Fencing && c.sc.Fencing {
			strict := c
			strict.sc.FencingStrict = true
			group = append(group, strict)
		}
		if wait > 0 && c.info.Need.Backend == strategies.BackendRedis && c.info.Need.Nodes <= 1 {
			for _, g := range group[:len(group):len(group)] {
				g.wait = wait
				group = append(group, g)
			}
		}
		if pgSync && c.info.Need.Backend == strategies.BackendPostgres {
			for _, g := range group[:len(group):len(group)] {
				g.pgSync = true
				group = append(group, g)
			}
		}
		out = append(out, group...)
	}
	return out
}

// verdictCases lists the cells: every fault (in faults.Names order) × every
// strategy it applies to; strategies with fencing tokens twice, with the
// store's check off (what the lock alone gives) and on (what the token
// adds). Strategies without tokens run once, the check being moot for them.
func verdictCases(infos []strategies.Info, faultNames []string) ([]cell, error) {
	var cases []cell
	for _, f := range faultNames {
		spec, err := faults.Parse(verdictFaultSpec(f))
		if err != nil {
			return nil, err
		}
		for _, info := range infos {
			if !spec.AppliesTo(info) {
				continue
			}
			fencings := []bool{false}
			if info.Fencing {
				fencings = []bool{false, true}
			}
			for _, fencing := range fencings {
				base := verdictScenario(f, fencing)
				if _, params, ok := strings.Cut(specString(spec), ":"); ok && strings.Contains(f, ":") {
					base.Variant = params // told apart from the designed cell
				}
				if spec.Random() {
					base.Payments = verdictRandomPayments
				}
				if info.Transactional {
					base.Store = loadgen.StorePostgres // it takes no lock: the store is its protection
				}
				sc, err := spec.Adjust(base)
				if err != nil {
					return nil, err
				}
				if err := sc.Validate(); err != nil {
					return nil, err
				}
				cases = append(cases, cell{info: info, spec: spec, sc: sc})
			}
			if f == "none" && !info.CrossProcess {
				// The monolith: both deliveries of each payment land on
				// one instance, on two of its workers at once. An
				// in-process lock is enough there (nolock still is not).
				sc := verdictScenario(f, false)
				sc.Instances, sc.Variant = 1, "instances=1"
				if err := sc.Validate(); err != nil {
					return nil, err
				}
				cases = append(cases, cell{info: info, spec: spec, sc: sc})
			}
			if f == "partition" && info.SessionBound {
				// A session-bound lock survives a cut (its connection
				// waits it out) but not a reset of its connection under a
				// live holder, which is how it is lost in production.
				reset, err := faults.Parse("partition:mode=reset")
				if err != nil {
					return nil, err
				}
				sc, err := reset.Adjust(verdictScenario(f, false))
				if err != nil {
					return nil, err
				}
				sc.Variant = "mode=reset"
				if err := sc.Validate(); err != nil {
					return nil, err
				}
				cases = append(cases, cell{info: info, spec: reset, sc: sc})
			}
		}
	}
	return cases, nil
}
