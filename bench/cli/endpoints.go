package cli

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/lockbench/lockbench/loadgen"
	"github.com/lockbench/lockbench/loadgen/agent"
	"github.com/lockbench/lockbench/servers"
	"github.com/lockbench/lockbench/strategies"
	"github.com/lockbench/lockbench/strategies/redisutil"
)

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
	// pgTopo and pgSync are --pg-topology and --pg-sync as given ("" when
	// not).
	pgTopo, pgSync string
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
	fs.StringVar(&ef.pgTopo, "pg-topology", "", "Postgres lockbench starts: single (one server) or replica (a primary and a hot standby streaming from it, reached through one DSN naming both, target_session_attrs=read-write) (default single)")
	fs.StringVar(&ef.pgSync, "pg-sync", "", "off or on: with --pg-topology replica, on makes the primary wait for the standby on every commit (synchronous_standby_names) (default off)")
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

// pgLayout is --pg-topology and --pg-sync: the Postgres layout to start,
// and whether its primary waits for its standby.
func (ef *endpointFlags) pgLayout() (servers.PgTopology, bool, error) {
	return parsePgLayout(ef.pgTopo, ef.pgSync)
}

// parsePgLayout reads --pg-topology and --pg-sync; --pg-sync on needs the
// replica topology.
func parsePgLayout(topo, sync string) (servers.PgTopology, bool, error) {
	t, err := servers.ParsePgTopology(topo)
	if err != nil {
		return "", false, usageErr("--pg-topology: %v", err)
	}
	switch sync {
	case "", "off":
		return t, false, nil
	case "on":
		if t != servers.PgReplica {
			return "", false, usageErr("--pg-sync: on needs a standby to wait for; want --pg-topology replica")
		}
		return t, true, nil
	}
	return "", false, usageErr("--pg-sync: want off or on, got %q", sync)
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
	if _, _, err := ef.pgLayout(); err != nil {
		return err
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
