package cli

import (
	"bytes"
	"cmp"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"
	"gopkg.in/yaml.v3"

	"github.com/lockbench/lockbench/loadgen"
	"github.com/lockbench/lockbench/loadgen/agent"
	"github.com/lockbench/lockbench/results"
	"github.com/lockbench/lockbench/servers"
	"github.com/lockbench/lockbench/strategies"
	"github.com/lockbench/lockbench/strategies/adapter"
	"github.com/lockbench/lockbench/strategies/redisutil"
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

func (sf *scenarioFlags) register(fs *flag.FlagSet) {
	d := loadgen.DefaultScenario()
	set := func(f func(*loadgen.Scenario)) { sf.setters = append(sf.setters, f) }
	// The flags parse; Scenario.Validate checks the ranges their help
	// states, for flags and --scenario files alike.
	intF := func(name string, def int, help string, apply func(*loadgen.Scenario, int)) {
		fs.Func(name, fmt.Sprintf("%s (default %d)", help, def), func(v string) error {
			n, err := strconv.Atoi(v)
			if err != nil {
				return errors.New("want an integer")
			}
			set(func(s *loadgen.Scenario) { apply(s, n) })
			return nil
		})
	}
	durF := func(name string, def time.Duration, help string, apply func(*loadgen.Scenario, time.Duration)) {
		fs.Func(name, fmt.Sprintf("%s (default %s)", help, def), func(v string) error {
			x, err := time.ParseDuration(v)
			if err != nil {
				return errors.New("want a duration such as 500ms or 2s")
			}
			set(func(s *loadgen.Scenario) { apply(s, x) })
			return nil
		})
	}
	fs.StringVar(&sf.file, "scenario", "", "YAML scenario file (keys are the flag names with _ for -); flags override it")
	fs.Func("name", fmt.Sprintf("scenario name recorded in the results, at most %d printable characters (default base)", loadgen.MaxNameLen), func(v string) error {
		set(func(s *loadgen.Scenario) { s.Name = v })
		return nil
	})
	intF("instances", d.Instances, fmt.Sprintf("app instances, each with its own strategy object, 1..%d", loadgen.MaxInstances), func(s *loadgen.Scenario, n int) { s.Instances = n })
	intF("workers", d.Workers, fmt.Sprintf("concurrent workers per instance, 1..%d (and instances × workers ≤ %d)", loadgen.MaxWorkers, loadgen.MaxTotalWorkers), func(s *loadgen.Scenario, n int) { s.Workers = n })
	intF("payments", d.Payments, fmt.Sprintf("payments to offer, 0..%d (0 with --duration: until the duration ends, at any rate)", loadgen.PaymentLimit), func(s *loadgen.Scenario, n int) { s.Payments = n })
	durF("duration", 0, fmt.Sprintf("run for this long instead of a payment count, 0s..%s", loadgen.MaxDuration), func(s *loadgen.Scenario, x time.Duration) { s.Duration = x; s.Payments = 0 })
	durF("warmup", 0, fmt.Sprintf("unrecorded warmup before measuring, 0s..%s", loadgen.MaxWarmup), func(s *loadgen.Scenario, x time.Duration) { s.Warmup = x })
	fs.Func("rate", fmt.Sprintf("open-loop payments per second, 0..%d; 0 = closed loop (default 0)", loadgen.MaxRate), func(v string) error {
		r, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return errors.New("want payments per second (0 = closed loop)")
		}
		set(func(s *loadgen.Scenario) { s.Rate = r })
		return nil
	})
	intF("deliveries", d.Deliveries, "deliveries of each payment: to distinct instances, then to distinct workers of one, 1..instances × workers", func(s *loadgen.Scenario, n int) { s.Deliveries = n })
	fs.Func("seed", "seed of the payment stream, any 64-bit integer (default 1)", func(v string) error {
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
	intF("accounts", d.Accounts, fmt.Sprintf("number of accounts, 1..%d, as memory allows", loadgen.MaxAccounts), func(s *loadgen.Scenario, n int) { s.Accounts = n })
	fs.Func("account-dist", fmt.Sprintf("account choice: uniform, zipf:S (1 < S ≤ %d) or hot:F (0 < F ≤ 1) (default uniform)", loadgen.MaxZipfS), func(v string) error {
		ad, err := loadgen.ParseAccountDist(v)
		if err != nil {
			return err
		}
		set(func(s *loadgen.Scenario) { s.AccountDist = ad })
		return nil
	})
	fs.Func("funding", fmt.Sprintf("share of its payments' total each account starts with, in (0, %d] (default %g)", loadgen.MaxFunding, d.Funding), func(v string) error {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return errors.New("want a number")
		}
		set(func(s *loadgen.Scenario) { s.Funding = f })
		return nil
	})
	fs.Func("hold", fmt.Sprintf("work inside the lock: a duration, uniform:MIN-MAX or exp:MEAN, at most %s (default 1ms)", loadgen.MaxHold), func(v string) error {
		h, err := loadgen.ParseHold(v)
		if err != nil {
			return err
		}
		set(func(s *loadgen.Scenario) { s.Hold = h })
		return nil
	})
	durF("ttl", d.TTL, fmt.Sprintf("lock TTL, %s..%s", loadgen.MinTTL, loadgen.MaxTTL), func(s *loadgen.Scenario, x time.Duration) { s.TTL = x })
	durF("acquire-timeout", d.AcquireTimeout, fmt.Sprintf("give up on the lock after this long, %s..%s", loadgen.MinAcquireTimeout, loadgen.MaxAcquireTimeout), func(s *loadgen.Scenario, x time.Duration) { s.AcquireTimeout = x })
	fs.Func("retry", fmt.Sprintf("retry policy: none, backoff or backoff:BASE-CAP with %s ≤ BASE ≤ CAP ≤ %s (default backoff = 1ms..50ms, jittered)", loadgen.MinBackoff, loadgen.MaxBackoff), func(v string) error {
		r, err := loadgen.ParseRetry(v)
		if err != nil {
			return err
		}
		set(func(s *loadgen.Scenario) { s.Retry = r })
		return nil
	})
	fs.Func("store", "the protected store: memory or postgres (default memory)", func(v string) error {
		kind := loadgen.StoreKind(v)
		if kind != loadgen.StoreMemory && kind != loadgen.StorePostgres {
			return errors.New("want memory or postgres")
		}
		sf.storeSet = true
		set(func(s *loadgen.Scenario) { s.Store = kind })
		return nil
	})
	fs.Func("fencing", "store checks fencing tokens: on (refuse a token older than the newest seen), strict (also one no newer than the last applied write's: a token handed out twice) or off (default on)", func(v string) error {
		if v != "on" && v != "off" && v != "strict" {
			return errors.New("want on, off or strict")
		}
		set(func(s *loadgen.Scenario) { s.Fencing, s.FencingStrict = v != "off", v == "strict" })
		return nil
	})
	fs.Func("interval", fmt.Sprintf("length of the latency intervals, %s..%s (default %s; %s for a run with a fault)", loadgen.MinInterval, loadgen.MaxInterval, loadgen.IntervalLength, faultInterval), func(v string) error {
		x, err := time.ParseDuration(v)
		if err != nil || x < loadgen.MinInterval || x > loadgen.MaxInterval {
			return fmt.Errorf("want a duration in %s..%s such as 250ms", loadgen.MinInterval, loadgen.MaxInterval)
		}
		sf.intervalSet = true
		set(func(s *loadgen.Scenario) { s.Interval = x })
		return nil
	})
	fs.Func("instance-mode", "instances as goroutine or process (default goroutine; with --agents, process)", func(v string) error {
		mode := loadgen.InstanceMode(v)
		if mode != loadgen.InstanceGoroutine && mode != loadgen.InstanceProcess {
			return errors.New("want goroutine or process")
		}
		sf.mode = mode
		set(func(s *loadgen.Scenario) { s.InstanceMode = mode })
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

// endpointFlags are the servers to use; empty means the environment, then
// servers lockbench starts itself.
type endpointFlags struct {
	redis, etcd, pg string
	etcdMembers     int
	redisAOF        bool
	zk              string
	zkMembers       int
	// nats is --nats-url: the queue strategy's NATS server(s).
	nats string
	// mysql is --mysql-dsn: a MariaDB or MySQL server (mysql-get-lock).
	mysql string
	// sentinels and master name a replicated Redis; topo is
	// --redis-topology as given ("" when not); wait and waitTimeout are
	// --redis-wait and --redis-wait-timeout.
	sentinels, master, topo string
	wait                    int
	waitTimeout             time.Duration
	// agents is --agents as given: HOST:PORT,… ("" for none).
	agents string
	// transport is --store-transport: how local instance processes reach
	// the store (loadgen.Options.StoreTransport); "" for the default, sync.
	transport string
}

func (ef *endpointFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&ef.redis, "redis-addrs", "", "existing Redis masters, comma-separated host:port, port 1..65535 (env "+servers.EnvRedisAddrs+")")
	fs.StringVar(&ef.etcd, "etcd-endpoints", "", "existing etcd endpoints, comma-separated http(s)://host:port URLs or host:port (env "+servers.EnvEtcdEndpoints+")")
	fs.StringVar(&ef.pg, "pg-dsn", "", "existing Postgres DSN (env "+servers.EnvPostgresDSN+")")
	fs.IntVar(&ef.etcdMembers, "etcd-members", 1, "members of a locally started etcd cluster: 1 or 3")
	fs.BoolVar(&ef.redisAOF, "redis-aof", false, "locally started Redis nodes persist with appendonly")
	fs.StringVar(&ef.zk, "zk-servers", "", "existing ZooKeeper servers, comma-separated host:port, port 1..65535 (env "+servers.EnvZKServers+")")
	fs.IntVar(&ef.zkMembers, "zk-members", 1, "members of a locally started ZooKeeper ensemble: 1 or 3")
	fs.StringVar(&ef.nats, "nats-url", "", "existing NATS server with JetStream, nats://[user:password@|token@]host:port, comma-separated for a cluster (env "+servers.EnvNATSURL+")")
	fs.StringVar(&ef.mysql, "mysql-dsn", "", "existing MariaDB or MySQL server, user:password@tcp(host:port)/dbname (go-sql-driver/mysql DSN) (env "+servers.EnvMySQLDSN+")")
	fs.StringVar(&ef.topo, "redis-topology", "", "Redis lockbench starts: masters (independent, as many as the strategies need) or sentinel (one primary, 2 replicas, 3 Sentinels) (default masters, or sentinel when "+servers.EnvRedisSentinels+" is set)")
	fs.StringVar(&ef.sentinels, "redis-sentinels", "", "existing Sentinels of a replicated Redis, comma-separated host:port: single-node Redis strategies find the primary through them (env "+servers.EnvRedisSentinels+")")
	fs.StringVar(&ef.master, "redis-master", "", "the name those Sentinels know the primary by (env "+servers.EnvRedisMaster+", default "+strategies.DefaultRedisMaster+")")
	fs.Func("redis-wait", "single-node Redis strategies call WAIT N after taking a lock, on the same connection; fewer acknowledgements count as not acquired (needs --redis-topology sentinel; default 0: no WAIT)", func(v string) error {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > maxRedisWait {
			return fmt.Errorf("want a number of replicas 0..%d", maxRedisWait)
		}
		ef.wait = n
		return nil
	})
	fs.StringVar(&ef.agents, "agents", "", "run the instance processes on these agents (lockbench agent), comma-separated host:port; a name stands for every address it resolves to; makes process the default instance mode (token in env "+agent.TokenEnv+")")
	fs.Func("store-transport", "how instance processes reach the store: sync (an Enter and a Finish, a round trip each) or sequenced (local processes: both one-way, applied in the order of a shared sequence; on agents: the Enter one-way, applied as it arrives, the Finish a round trip; docs/seq-store.md; needs --instance-mode process or --agents; verdicts and matrix apply it to their process cells; a run it cannot serve runs sync and says so) (default: sequenced for local instance processes where it can serve the run, sync where it cannot and on agents)", func(v string) error {
		if v != loadgen.TransportSync && v != loadgen.TransportSequenced {
			return fmt.Errorf("want %s or %s", loadgen.TransportSync, loadgen.TransportSequenced)
		}
		ef.transport = v
		return nil
	})
	fs.Func("redis-wait-timeout", fmt.Sprintf("WAIT's timeout (default: the TTL ÷ %d)", strategies.RedisWaitDivisor), func(v string) error {
		d, err := time.ParseDuration(v)
		if err != nil || d < time.Millisecond || d > time.Minute {
			return errors.New("want a duration from 1ms to 1m such as 100ms")
		}
		ef.waitTimeout = d
		return nil
	})
}

// topology is the Redis layout of the run: --redis-topology, else sentinel
// when Sentinels are named (flag or environment), else masters.
func (ef *endpointFlags) topology() (servers.Topology, error) {
	if ef.topo != "" {
		t, err := servers.ParseTopology(ef.topo)
		if err != nil {
			return "", usageErr("--redis-topology: %v", err)
		}
		return t, nil
	}
	if ef.sentinels != "" || len(servers.EndpointsFromEnv().RedisSentinels) > 0 {
		return servers.TopologySentinel, nil
	}
	return servers.TopologyMasters, nil
}

// check reports bad Redis topology flags before anything starts: an
// unknown topology, or WAIT without replicas to wait for.
func (ef *endpointFlags) check() error {
	topo, err := ef.topology()
	if err != nil {
		return err
	}
	if ef.wait > 0 && topo != servers.TopologySentinel {
		return usageErr("--redis-wait: the masters topology has no replicas to wait for; want --redis-topology sentinel (or %s)", servers.EnvRedisSentinels)
	}
	if ef.waitTimeout > 0 && ef.wait == 0 {
		return usageErr("--redis-wait-timeout: only with --redis-wait N")
	}
	if ef.agents != "" {
		if _, err := parseList("agents", ef.agents, "host:port", checkHostPort); err != nil {
			return err
		}
	}
	return nil
}

// checkSequencedCells refuses --store-transport sequenced for the cells
// of `verdicts` and `matrix` when none of them has instance processes:
// it applies to those that do (the pause fault's, and every cell on
// agents), and would apply to none.
func (ef *endpointFlags) checkSequencedCells(cases []cell) error {
	if !ef.sequenced() || ef.agents != "" {
		return nil
	}
	for _, c := range cases {
		if c.sc.InstanceMode == loadgen.InstanceProcess {
			return nil
		}
	}
	return usageErr("--store-transport: sequenced needs instance processes, and none of these cells runs them (the pause fault's do); want --store-transport sync")
}

// sequenced reports whether --store-transport sequenced was asked for.
func (ef *endpointFlags) sequenced() bool { return ef.transport == loadgen.TransportSequenced }

// checkSequenced refuses --store-transport sequenced for the runs of
// `run` and `plan` unless every one of them (scs, after their faults
// adjusted them) has instance processes: in-process instances call the
// store directly. On agents every instance is a process.
func (ef *endpointFlags) checkSequenced(sf *scenarioFlags, scs ...loadgen.Scenario) error {
	if !ef.sequenced() || ef.agents != "" {
		return nil
	}
	goroutines := sf.mode == loadgen.InstanceGoroutine
	for _, sc := range scs {
		goroutines = goroutines || sc.InstanceMode != loadgen.InstanceProcess
	}
	if goroutines {
		return usageErr("--store-transport: sequenced needs instance processes; want --instance-mode process (or --agents), or --store-transport sync")
	}
	return nil
}

func (ef *endpointFlags) endpoints() (servers.Endpoints, error) {
	if err := ef.check(); err != nil {
		return servers.Endpoints{}, err
	}
	if ef.etcdMembers != 1 && ef.etcdMembers != 3 {
		return servers.Endpoints{}, usageErr("--etcd-members: want 1 or 3, got %d", ef.etcdMembers)
	}
	if ef.zkMembers != 1 && ef.zkMembers != 3 {
		return servers.Endpoints{}, usageErr("--zk-members: want 1 or 3, got %d", ef.zkMembers)
	}
	e := servers.EndpointsFromEnv()
	var err error
	if ef.redis != "" {
		if e.RedisAddrs, err = parseList("redis-addrs", ef.redis, "host:port or redis[s]://[user:password@]host:port", checkRedisEntry); err != nil {
			return e, err
		}
	}
	if ef.etcd != "" {
		if e.EtcdEndpoints, err = parseList("etcd-endpoints", ef.etcd, "http(s)://host:port or host:port", checkEtcdEndpoint); err != nil {
			return e, err
		}
	}
	if ef.pg != "" {
		if _, err := pgconn.ParseConfig(ef.pg); err != nil {
			return e, usageErr("--pg-dsn: not a Postgres connection string: %s", oneLine(servers.Redact(err.Error())))
		}
		e.PostgresDSN = ef.pg
	}
	if ef.zk != "" {
		if e.ZKServers, err = parseList("zk-servers", ef.zk, "host:port", checkHostPort); err != nil {
			return e, err
		}
	}
	if ef.nats != "" {
		if _, err = parseList("nats-url", ef.nats, "nats://host:port", checkNATSURL); err != nil {
			return e, err
		}
		e.NATSURL = ef.nats
	}
	if ef.mysql != "" {
		if err := checkMySQLDSN(ef.mysql); err != nil {
			return e, usageErr("--mysql-dsn: %v", err)
		}
		e.MySQLDSN = ef.mysql
	}
	if ef.sentinels != "" {
		if e.RedisSentinels, err = parseList("redis-sentinels", ef.sentinels, "host:port or redis[s]://[user:password@]host:port", checkRedisEntry); err != nil {
			return e, err
		}
	}
	if ef.master != "" {
		e.RedisMaster = ef.master
	}
	if topo, _ := ef.topology(); topo == servers.TopologyMasters {
		// Asked for masters: Sentinels named in the environment are not used.
		e.RedisSentinels, e.RedisMaster = nil, ""
	}
	return e, nil
}

// parseList splits the comma-separated value of --flag (blanks around
// items are dropped) and checks each item. An empty item is refused: a
// stray comma is a typing mistake, not a request for a shorter list; so is
// an item given twice.
func parseList(flag, v, want string, check func(string) error) ([]string, error) {
	// Items may be URLs with a password (rediss://user:pass@host:port):
	// what the errors quote is redacted.
	usageErr := func(format string, a ...any) error { return usageErr("%s", servers.Redact(fmt.Sprintf(format, a...))) }
	var out []string
	for _, item := range strings.Split(v, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			return nil, usageErr("--%s: empty item in %q; want a comma-separated list of %s", flag, v, want)
		}
		if slices.Contains(out, item) {
			return nil, usageErr("--%s: %q is given twice", flag, item)
		}
		if err := check(item); err != nil {
			return nil, usageErr("--%s: %v; want a comma-separated list of %s", flag, err, want)
		}
		out = append(out, item)
	}
	return out, nil
}

// checkRedisEntry accepts a Redis entry: host:port, or
// redis[s]://[user:password@]host:port with a port in 1..65535. Its errors
// never quote a URL (it may hold a password).
func checkRedisEntry(s string) error {
	if !strings.Contains(s, "://") {
		if strings.Contains(s, "@") {
			return errors.New("an entry with a login needs a scheme, redis:// or rediss:// (not shown: it may hold a password)")
		}
		return checkHostPort(s)
	}
	e, err := redisutil.ParseEndpoint(s)
	if err != nil {
		return errors.New(strings.TrimPrefix(err.Error(), "redisutil: "))
	}
	return checkHostPort(e.Addr)
}

// checkHostPort accepts host:port with a port in 1..65535 (an empty host
// is the local machine).
func checkHostPort(s string) error {
	host, port, err := net.SplitHostPort(s)
	if n, perr := strconv.Atoi(port); err != nil || perr != nil || n < 1 || n > 65535 || strings.ContainsAny(host, " \t/") {
		return fmt.Errorf("bad address %q", s)
	}
	return nil
}

// checkEtcdEndpoint accepts what the etcd client dials: an http or https
// URL with a host, or host:port.
func checkEtcdEndpoint(s string) error {
	if !strings.Contains(s, "://") {
		return checkHostPort(s)
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("bad endpoint %q", s)
	}
	return nil
}

// checkNATSURL accepts nats://host:port (with a user and password or a
// token) or host:port. The error never quotes the URL: it may hold a
// secret.
func checkNATSURL(s string) error {
	if !strings.Contains(s, "://") {
		return checkHostPort(s)
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "nats" && u.Scheme != "tls") || u.Port() == "" {
		return errors.New("want nats://host:port (not shown: it may hold a password or a token)")
	}
	return nil
}

// checkMySQLDSN accepts a go-sql-driver/mysql DSN over TCP,
// user:password@tcp(host:port)/dbname, with a port in 1..65535. Its
// errors never quote the DSN: it may hold a password.
func checkMySQLDSN(s string) error {
	cfg, err := mysql.ParseDSN(s)
	if err != nil || (cfg.Net != "tcp" && cfg.Net != "tcp4" && cfg.Net != "tcp6") {
		return errors.New("want [user[:password]@]tcp(host:port)/dbname (not shown: it may hold a password)")
	}
	if checkHostPort(cfg.Addr) != nil {
		return errors.New("want a host:port with a port in 1..65535 in tcp(…) (not shown: it may hold a password)")
	}
	return nil
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

// faultInterval is the latency interval of a run with a fault, unless
// --interval says otherwise: 250ms. Fault runs last a few seconds, and at
// one interval a second the timeline would show a fault's shape in three
// points.
const faultInterval = 250 * time.Millisecond

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
