package cli

import (
	"bytes"
	"cmp"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/lockbench/lockbench/loadgen"
	"github.com/lockbench/lockbench/results"
	"github.com/lockbench/lockbench/servers"
	"github.com/lockbench/lockbench/strategies"
	"github.com/lockbench/lockbench/strategies/adapter"
)

// scenarioFlags registers the scenario flags (loadgen.Scenario) on fs. Each flag
// records a setter; apply runs them over a base scenario (the defaults, or a
// --scenario file), so flags override the file.
type scenarioFlags struct {
	file    string
	setters []func(*loadgen.Scenario)
	// storeSet is true when --store was given, intervalSet when
	// --interval was; mode is --instance-mode's value, "" when not given.
	storeSet, intervalSet bool
	mode                  loadgen.InstanceMode
}

// checkAgentsMode refuses --instance-mode goroutine beside --agents: the
// instances of a run with agents are processes on the agents.
func (sf *scenarioFlags) checkAgentsMode(ef *endpointFlags) error {
	if ef.agents != "" && sf.mode == loadgen.InstanceGoroutine {
		return usageErr("--instance-mode: with --agents every instance is a process on an agent; want process, or leave --instance-mode out")
	}
	return nil
}

func newFlagSet(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("lockbench "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

// register puts the scenario table's flags (loadgen.ScenarioFlags) and
// --scenario on fs.
func (sf *scenarioFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&sf.file, "scenario", "", "YAML scenario file (keys are the flag names with _ for -); flags override it")
	for _, f := range loadgen.ScenarioFlags() {
		fs.Func(f.Name, f.Usage, func(v string) error {
			set, err := f.Parse(v)
			if err != nil {
				return err
			}
			sf.setters = append(sf.setters, set)
			switch f.Name {
			case "store":
				sf.storeSet = true
			case "interval":
				sf.intervalSet = true
			case "instance-mode":
				var given loadgen.Scenario
				set(&given)
				sf.mode = given.InstanceMode
			}
			return nil
		})
	}
}

// scenario builds the scenario: defaults, then the file, then the flags.
func (sf *scenarioFlags) scenario() (loadgen.Scenario, error) {
	return sf.scenarioOn(loadgen.DefaultScenario())
}

// scenarioOn builds the scenario on s: the file, then the flags.
func (sf *scenarioFlags) scenarioOn(s loadgen.Scenario) (loadgen.Scenario, error) {
	if sf.file != "" {
		b, err := readInput("scenario", sf.file)
		if err != nil {
			return s, err
		}
		dec := yaml.NewDecoder(bytes.NewReader(b))
		dec.KnownFields(true)
		if err := dec.Decode(&s); err != nil && !errors.Is(err, io.EOF) {
			return s, usageErr("--scenario: %s is not a valid scenario: %s", sf.file, oneLine(err.Error()))
		}
	}
	for _, f := range sf.setters {
		f(&s)
	}
	if err := s.Validate(); err != nil {
		return s, err
	}
	return s, nil
}

// storeFor puts the run on the Postgres store when a transactional strategy
// (pg-unique) is among names, and every other strategy of the run with it,
// like for like; an explicit --store memory is refused.
func (sf *scenarioFlags) storeFor(infos []strategies.Info, sc *loadgen.Scenario) error {
	for _, info := range infos {
		if !info.Transactional {
			continue
		}
		if sf.storeSet && sc.Store != loadgen.StorePostgres {
			return usageErr("--store: %s runs each delivery as a transaction on the Postgres store; want --store postgres, or leave --store out", info.Name)
		}
		sc.Store = loadgen.StorePostgres
	}
	return nil
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// maxInputFile bounds an input file a flag names (--scenario): 1 MiB, far
// more than any scenario; a larger file, or /dev/zero, is a mistake.
const maxInputFile = 1 << 20

// readInput reads the regular file path that --flag names, at most
// maxInputFile bytes of it; anything else (a directory, a device, a pipe
// that might never end) is a usage error.
func readInput(flag, path string) ([]byte, error) {
	// Stat before Open: opening a FIFO would wait for a writer.
	if st, err := os.Stat(path); err != nil {
		return nil, usageErr("--%s: cannot read %q: %v", flag, path, errors.Unwrap(err))
	} else if !st.Mode().IsRegular() {
		return nil, usageErr("--%s: %q is not a regular file", flag, path)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, usageErr("--%s: cannot read %q: %v", flag, path, errors.Unwrap(err))
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxInputFile+1))
	switch {
	case err != nil:
		return nil, usageErr("--%s: cannot read %q: %s", flag, path, oneLine(err.Error()))
	case len(b) > maxInputFile:
		return nil, usageErr("--%s: %q is larger than %d bytes", flag, path, maxInputFile)
	}
	return b, nil
}

// parseStrategies checks a --strategy list against the registry (all, or
// names from it) and returns their entries: the command's one lookup of
// each.
func parseStrategies(v string) ([]strategies.Info, error) {
	if v == "all" {
		return strategies.All(), nil
	}
	// An exec: adapter that cannot say hello (PATH --hello, within 5s) is
	// not bad input but a broken adapter: its own line, exit 1.
	if err := commaInExec(v); err != nil {
		return nil, err
	}
	var broken error
	found := map[string]strategies.Info{}
	names, err := parseList("strategy", v, strings.Join(strategies.Names(), ", ")+", exec:PATH [ARGS], or all", func(n string) error {
		info, err := strategies.Resolve(n)
		if err != nil && strings.HasPrefix(n, adapter.ExecPrefix) && strings.TrimSpace(strings.TrimPrefix(n, adapter.ExecPrefix)) != "" {
			broken = cmp.Or(broken, err)
			return nil
		}
		found[n] = info
		return err
	})
	if err != nil {
		return nil, err
	}
	if broken != nil {
		return nil, broken
	}
	infos := make([]strategies.Info, len(names))
	for i, n := range names {
		infos[i] = found[n]
	}
	return infos, nil
}

// commaInExec refuses a comma inside an exec: item's arguments: the comma
// separates strategies, so what follows it would be read as a strategy
// name. It names the comma and the way round it.
func commaInExec(v string) error {
	items := strings.Split(v, ",")
	for i := 1; i < len(items); i++ {
		prev, item := strings.TrimSpace(items[i-1]), strings.TrimSpace(items[i])
		if !strings.HasPrefix(prev, adapter.ExecPrefix) || !strings.Contains(strings.TrimPrefix(prev, adapter.ExecPrefix), " ") {
			continue
		}
		if _, ok := strategies.Registered(item); ok || strings.HasPrefix(item, adapter.ExecPrefix) || item == "" {
			continue
		}
		return usageErr("--strategy: %q follows a comma inside the arguments of %q; a comma separates strategies, so an adapter's argument cannot hold one: put the arguments in a script and give exec: its path", item, prev)
	}
	return nil
}

// namesOf lists the strategies' names, comma-separated.
func namesOf(infos []strategies.Info) string {
	names := make([]string, len(infos))
	for i, info := range infos {
		names[i] = info.Name
	}
	return strings.Join(names, ", ")
}

// storeNeed is what the Postgres store needs.
var storeNeed = strategies.Need{Backend: strategies.BackendPostgres, Nodes: 1}

// needs says which servers the strategies (and the store) need.
func needs(infos []strategies.Info, sc loadgen.Scenario) servers.Needs {
	var n servers.Needs
	for _, info := range infos {
		n.Add(info.Need)
	}
	if sc.Store == loadgen.StorePostgres {
		n.Add(storeNeed)
	}
	return n
}

// maxTrials bounds --trials: 1000.
const maxTrials = 1000

// trialsFlag registers --trials on fs.
// maxRedisWait bounds --redis-wait: 100 replicas, more than any Redis
// deployment acknowledges a write from.
const maxRedisWait = 100

// historyFlag registers --history on fs.
func historyFlag(fs *flag.FlagSet) *bool {
	return fs.Bool("history", false, "write each run's history (every delivery's events) to DIR/history/, for `lockbench check` (docs/history.md)")
}

func trialsFlag(fs *flag.FlagSet) *int {
	n := 1
	fs.Func("trials", fmt.Sprintf("run each cell this many times, 1..%d, with seeds seed, seed+1, … and fresh state; from %d up, every figure gets a 95%% confidence interval (default 1)", maxTrials, results.MinTrialsForCI), func(v string) error {
		t, err := strconv.Atoi(v)
		if err != nil || t < 1 || t > maxTrials {
			return fmt.Errorf("want a number of trials 1..%d", maxTrials)
		}
		n = t
		return nil
	})
	return &n
}

// seedFlag registers --seed on fs, for the commands whose scenarios are
// their own (verdicts, matrix).
func seedFlag(fs *flag.FlagSet) *int64 {
	seed := int64(loadgen.DefaultSeed)
	fs.Func("seed", fmt.Sprintf("seed of the first trial's payment stream, any 64-bit integer; trial k uses seed+k−1 (default %d)", loadgen.DefaultSeed), func(v string) error {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return errors.New("want an integer")
		}
		seed = n
		return nil
	})
	return &seed
}

// faultValues is a repeatable --fault: each value is one
// NAME[:key=value,…] spec (its own commas separate its parameters), or a
// comma-separated list of bare names (or all); def when none is given.
type faultValues struct {
	vals []string
	def  string
}

// faultsFlag registers --fault on fs, repeatable, with the default def.
func faultsFlag(fs *flag.FlagSet, def, help string) *faultValues {
	v := &faultValues{def: def}
	fs.Var(v, "fault", help+"; repeatable, one spec each")
	return v
}

func (f *faultValues) String() string {
	if f == nil {
		return ""
	}
	return strings.Join(f.list(), " ")
}

func (f *faultValues) Set(v string) error {
	f.vals = append(f.vals, v)
	return nil
}

// list is the values given, or the default.
func (f *faultValues) list() []string {
	if len(f.vals) == 0 {
		return []string{f.def}
	}
	return f.vals
}
