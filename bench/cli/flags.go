package cli

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/lockbench/lockbench/loadgen"
	"github.com/lockbench/lockbench/results"
	"github.com/lockbench/lockbench/servers"
	"github.com/lockbench/lockbench/strategies"
)

// scenarioFlags registers the scenario flags (loadgen.Scenario) on fs. Each flag
// records a setter; apply runs them over a base scenario (the defaults, or a
// --scenario file), so flags override the file.
type scenarioFlags struct {
	file    string
	setters []func(*loadgen.Scenario)
	// storeSet is true when --store was given, intervalSet when
	// --interval was.
	storeSet, intervalSet bool
}

func newFlagSet(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("lockbench "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

func (sf *scenarioFlags) register(fs *flag.FlagSet) {
	d := loadgen.DefaultScenario()
	set := func(f func(*loadgen.Scenario)) { sf.setters = append(sf.setters, f) }
	intF := func(name string, def int, help string, min int, apply func(*loadgen.Scenario, int)) {
		fs.Func(name, fmt.Sprintf("%s (default %d)", help, def), func(v string) error {
			n, err := strconv.Atoi(v)
			if err != nil || n < min {
				return fmt.Errorf("want an integer ≥ %d", min)
			}
			set(func(s *loadgen.Scenario) { apply(s, n) })
			return nil
		})
	}
	durF := func(name string, def time.Duration, help string, positive bool, apply func(*loadgen.Scenario, time.Duration)) {
		fs.Func(name, fmt.Sprintf("%s (default %s)", help, def), func(v string) error {
			x, err := time.ParseDuration(v)
			if err != nil || x < 0 || (positive && x == 0) {
				if positive {
					return errors.New("want a duration > 0 such as 500ms or 2s")
				}
				return errors.New("want a duration ≥ 0 such as 500ms or 30s")
			}
			set(func(s *loadgen.Scenario) { apply(s, x) })
			return nil
		})
	}
	fs.StringVar(&sf.file, "scenario", "", "YAML scenario file (keys are the flag names with _ for -); flags override it")
	fs.Func("name", "scenario name recorded in the results (default base)", func(v string) error {
		set(func(s *loadgen.Scenario) { s.Name = v })
		return nil
	})
	intF("instances", d.Instances, "app instances, each with its own strategy object", 1, func(s *loadgen.Scenario, n int) { s.Instances = n })
	intF("workers", d.Workers, "concurrent workers per instance", 1, func(s *loadgen.Scenario, n int) { s.Workers = n })
	intF("payments", d.Payments, "payments to offer (0 with --duration: until the duration ends)", 0, func(s *loadgen.Scenario, n int) { s.Payments = n })
	durF("duration", 0, "run for this long instead of a payment count", false, func(s *loadgen.Scenario, x time.Duration) { s.Duration = x; s.Payments = 0 })
	durF("warmup", 0, "unrecorded warmup before measuring", false, func(s *loadgen.Scenario, x time.Duration) { s.Warmup = x })
	fs.Func("rate", "open-loop payments per second; 0 = closed loop (default 0)", func(v string) error {
		r, err := strconv.ParseFloat(v, 64)
		if err != nil || r < 0 {
			return errors.New("want payments per second ≥ 0 (0 = closed loop)")
		}
		set(func(s *loadgen.Scenario) { s.Rate = r })
		return nil
	})
	intF("deliveries", d.Deliveries, "deliveries of each payment: to distinct instances, then to distinct workers of one (at most instances × workers)", 1, func(s *loadgen.Scenario, n int) { s.Deliveries = n })
	fs.Func("seed", "seed of the payment stream (default 1)", func(v string) error {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return errors.New("want an integer")
		}
		set(func(s *loadgen.Scenario) { s.Seed = n })
		return nil
	})
	fs.Func("lock-key", "what the lock guards: account or payment (default account)", func(v string) error {
		if v != "account" && v != "payment" {
			return errors.New("want account or payment")
		}
		set(func(s *loadgen.Scenario) { s.LockKey = v })
		return nil
	})
	intF("accounts", d.Accounts, "number of accounts", 1, func(s *loadgen.Scenario, n int) { s.Accounts = n })
	fs.Func("account-dist", "account choice: uniform, zipf:S or hot:F (default uniform)", func(v string) error {
		ad, err := loadgen.ParseAccountDist(v)
		if err != nil {
			return err
		}
		set(func(s *loadgen.Scenario) { s.AccountDist = ad })
		return nil
	})
	fs.Func("funding", fmt.Sprintf("share of its payments' total each account starts with (default %g)", d.Funding), func(v string) error {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f <= 0 {
			return errors.New("want a number > 0")
		}
		set(func(s *loadgen.Scenario) { s.Funding = f })
		return nil
	})
	fs.Func("hold", "work inside the lock: a duration, uniform:MIN-MAX or exp:MEAN (default 1ms)", func(v string) error {
		h, err := loadgen.ParseHold(v)
		if err != nil {
			return err
		}
		set(func(s *loadgen.Scenario) { s.Hold = h })
		return nil
	})
	durF("ttl", d.TTL, "lock TTL", true, func(s *loadgen.Scenario, x time.Duration) { s.TTL = x })
	durF("acquire-timeout", d.AcquireTimeout, "give up on the lock after this long", true, func(s *loadgen.Scenario, x time.Duration) { s.AcquireTimeout = x })
	fs.Func("retry", "retry policy: none, backoff or backoff:BASE-CAP (default backoff = 1ms..50ms, jittered)", func(v string) error {
		r, err := loadgen.ParseRetry(v)
		if err != nil {
			return err
		}
		set(func(s *loadgen.Scenario) { s.Retry = r })
		return nil
	})
	fs.Func("store", "the protected store: memory or postgres (default memory)", func(v string) error {
		if v != "memory" && v != "postgres" {
			return errors.New("want memory or postgres")
		}
		sf.storeSet = true
		set(func(s *loadgen.Scenario) { s.Store = v })
		return nil
	})
	fs.Func("fencing", "store checks fencing tokens: on or off (default on)", func(v string) error {
		if v != "on" && v != "off" {
			return errors.New("want on or off")
		}
		set(func(s *loadgen.Scenario) { s.Fencing = v == "on" })
		return nil
	})
	fs.Func("interval", fmt.Sprintf("length of the latency intervals, at least %s (default %s; %s for a run with a fault)", loadgen.MinInterval, loadgen.IntervalLength, faultInterval), func(v string) error {
		x, err := time.ParseDuration(v)
		if err != nil || x < loadgen.MinInterval {
			return fmt.Errorf("want a duration ≥ %s such as 250ms", loadgen.MinInterval)
		}
		sf.intervalSet = true
		set(func(s *loadgen.Scenario) { s.Interval = x })
		return nil
	})
	fs.Func("instance-mode", "instances as goroutine or process (default goroutine)", func(v string) error {
		if v != "goroutine" && v != "process" {
			return errors.New("want goroutine or process")
		}
		set(func(s *loadgen.Scenario) { s.InstanceMode = v })
		return nil
	})
}

// scenario builds the scenario: defaults, then the file, then the flags.
func (sf *scenarioFlags) scenario() (loadgen.Scenario, error) {
	return sf.scenarioOn(loadgen.DefaultScenario())
}

// scenarioOn builds the scenario on s: the file, then the flags.
func (sf *scenarioFlags) scenarioOn(s loadgen.Scenario) (loadgen.Scenario, error) {
	if sf.file != "" {
		b, err := os.ReadFile(sf.file)
		if err != nil {
			return s, usageErr("--scenario: cannot read %s: %v", sf.file, errors.Unwrap(err))
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
func (sf *scenarioFlags) storeFor(names []string, sc *loadgen.Scenario) error {
	for _, name := range names {
		info, _ := strategies.Lookup(name)
		if !info.Transactional {
			continue
		}
		if sf.storeSet && sc.Store != "postgres" {
			return usageErr("--store: %s takes no lock and runs on the Postgres store; want --store postgres, or leave --store out", name)
		}
		sc.Store = "postgres"
	}
	return nil
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// endpointFlags are the servers to use; empty means the environment, then
// servers lockbench starts itself.
type endpointFlags struct {
	redis, etcd, pg string
	etcdMembers     int
	redisAOF        bool
	zk              string
	zkMembers       int
}

func (ef *endpointFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&ef.redis, "redis-addrs", "", "existing Redis masters, comma-separated host:port (env "+servers.EnvRedisAddrs+")")
	fs.StringVar(&ef.etcd, "etcd-endpoints", "", "existing etcd endpoints, comma-separated URLs (env "+servers.EnvEtcdEndpoints+")")
	fs.StringVar(&ef.pg, "pg-dsn", "", "existing Postgres DSN (env "+servers.EnvPostgresDSN+")")
	fs.IntVar(&ef.etcdMembers, "etcd-members", 1, "members of a locally started etcd cluster: 1 or 3")
	fs.BoolVar(&ef.redisAOF, "redis-aof", false, "locally started Redis nodes persist with appendonly")
	fs.StringVar(&ef.zk, "zk-servers", "", "existing ZooKeeper servers, comma-separated host:port (env "+servers.EnvZKServers+")")
	fs.IntVar(&ef.zkMembers, "zk-members", 1, "members of a locally started ZooKeeper ensemble: 1 or 3")
}

func (ef *endpointFlags) endpoints() (servers.Endpoints, error) {
	if ef.etcdMembers != 1 && ef.etcdMembers != 3 {
		return servers.Endpoints{}, usageErr("--etcd-members: want 1 or 3, got %d", ef.etcdMembers)
	}
	if ef.zkMembers != 1 && ef.zkMembers != 3 {
		return servers.Endpoints{}, usageErr("--zk-members: want 1 or 3, got %d", ef.zkMembers)
	}
	e := servers.EndpointsFromEnv()
	if ef.redis != "" {
		e.RedisAddrs = splitList(ef.redis)
	}
	if ef.etcd != "" {
		e.EtcdEndpoints = splitList(ef.etcd)
	}
	if ef.pg != "" {
		e.PostgresDSN = ef.pg
	}
	if ef.zk != "" {
		e.ZKServers = splitList(ef.zk)
	}
	return e, nil
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// parseStrategies checks a --strategy list against the registry.
func parseStrategies(v string) ([]string, error) {
	if v == "" || v == "all" {
		return strategies.Names(), nil
	}
	var out []string
	for _, n := range splitList(v) {
		if _, ok := strategies.Lookup(n); !ok {
			return nil, usageErr("--strategy: unknown strategy %q; want a comma-separated list of %s, or all", n, strings.Join(strategies.Names(), ", "))
		}
		out = append(out, n)
	}
	return out, nil
}

// storeNeed is what the Postgres store needs.
var storeNeed = strategies.Need{Backend: strategies.BackendPostgres, Nodes: 1}

// needs says which servers the strategies (and the store) need.
func needs(names []string, sc loadgen.Scenario) servers.Needs {
	var n servers.Needs
	for _, name := range names {
		info, _ := strategies.Lookup(name)
		n.Add(info.Need)
	}
	if sc.Store == "postgres" {
		n.Add(storeNeed)
	}
	return n
}

// faultInterval is the latency interval of a run with a fault, unless
// --interval says otherwise: 250ms. Fault runs last a few seconds, and at
// one interval a second the timeline would show a fault's shape in three
// points.
const faultInterval = 250 * time.Millisecond

// maxTrials bounds --trials: 1000.
const maxTrials = 1000

// trialsFlag registers --trials on fs.
func trialsFlag(fs *flag.FlagSet) *int {
	n := 1
	fs.Func("trials", fmt.Sprintf("run each cell this many times, with seeds seed, seed+1, … and fresh state; from %d up, every figure gets a 95%% confidence interval (default 1)", results.MinTrialsForCI), func(v string) error {
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
	fs.Func("seed", fmt.Sprintf("seed of the first trial's payment stream; trial k uses seed+k−1 (default %d)", loadgen.DefaultSeed), func(v string) error {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return errors.New("want an integer")
		}
		seed = n
		return nil
	})
	return &seed
}
