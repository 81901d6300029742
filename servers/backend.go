package servers

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/lockbench/lockbench/strategies"
)

// backend is everything lockbench knows about one kind of server: where a
// user names their own, how its endpoints sit in a lock config, which of a
// Cluster's servers are its nodes, and how to point one endpoint elsewhere
// (a partition's proxy). A new kind of server is one more entry here, its
// start code in this package, and its strategy's folder.
type backend struct {
	kind strategies.Backend
	// noun names one node for people: "Redis node".
	noun string
	// flag and env are where a user names existing servers of this kind.
	flag, env string
	// endpoints returns this backend's entries of ep, one per node.
	endpoints func(ep Endpoints) []string
	// fromConfig and toConfig read and write this backend's entries of a
	// lock config.
	fromConfig func(c strategies.Config) []string
	toConfig   func(c *strategies.Config, endpoints []string)
	// nodes returns the servers of this kind a Cluster started, in the
	// order of its endpoints.
	nodes func(c *Cluster) []Node
	// need records in n that a run needs count nodes (0: the backend as a
	// whole).
	need func(n *Needs, count int)
	// hostPort returns the TCP address an endpoint dials; withHostPort
	// returns the endpoint pointed at another address.
	hostPort     func(endpoint string) (string, error)
	withHostPort func(endpoint, addr string) (string, error)
	// forgets: a node killed and started again comes back empty (Redis
	// without persistence, the default), so it forgets the locks it held.
	forgets bool
	// clock: a node's clock can be moved while it runs (libfaketime).
	clock bool
}

var backends = map[strategies.Backend]*backend{
	strategies.BackendRedis: {
		kind: strategies.BackendRedis, noun: "Redis node",
		flag: "--redis-addrs", env: EnvRedisAddrs,
		endpoints:  func(ep Endpoints) []string { return ep.RedisAddrs },
		fromConfig: func(c strategies.Config) []string { return c.RedisAddrs },
		toConfig:   func(c *strategies.Config, e []string) { c.RedisAddrs = e },
		nodes: func(c *Cluster) []Node {
			out := make([]Node, len(c.Redis))
			for i, r := range c.Redis {
				out[i] = r
			}
			return out
		},
		need:         func(n *Needs, count int) { n.Redis = max(n.Redis, count, 1) },
		hostPort:     redisHostPort,
		withHostPort: redisWithHostPort,
		forgets:      true,
		clock:        true,
	},
	strategies.BackendEtcd: {
		kind: strategies.BackendEtcd, noun: "etcd member",
		flag: "--etcd-endpoints", env: EnvEtcdEndpoints,
		endpoints:  func(ep Endpoints) []string { return ep.EtcdEndpoints },
		fromConfig: func(c strategies.Config) []string { return c.EtcdEndpoints },
		toConfig:   func(c *strategies.Config, e []string) { c.EtcdEndpoints = e },
		nodes: func(c *Cluster) []Node {
			out := make([]Node, len(c.Etcd))
			for i, m := range c.Etcd {
				out[i] = m
			}
			return out
		},
		need:         func(n *Needs, _ int) { n.Etcd = true },
		hostPort:     hostOfURL,
		withHostPort: replaceURLHost,
	},
	strategies.BackendPostgres: {
		kind: strategies.BackendPostgres, noun: "Postgres server",
		flag: "--pg-dsn", env: EnvPostgresDSN,
		endpoints:  func(ep Endpoints) []string { return nonEmpty(ep.PostgresDSN) },
		fromConfig: func(c strategies.Config) []string { return nonEmpty(c.PostgresDSN) },
		toConfig: func(c *strategies.Config, e []string) {
			c.PostgresDSN = ""
			if len(e) > 0 {
				c.PostgresDSN = e[0]
			}
		},
		nodes: func(c *Cluster) []Node {
			if c.Postgres == nil {
				return nil
			}
			return []Node{c.Postgres}
		},
		need:         func(n *Needs, _ int) { n.Postgres = true },
		hostPort:     hostOfDSN,
		withHostPort: replaceDSNHost,
	},
	strategies.BackendZooKeeper: {
		kind: strategies.BackendZooKeeper, noun: "ZooKeeper server",
		flag: "--zk-servers", env: EnvZKServers,
		endpoints:  func(ep Endpoints) []string { return ep.ZKServers },
		fromConfig: func(c strategies.Config) []string { return c.ZKServers },
		toConfig:   func(c *strategies.Config, e []string) { c.ZKServers = e },
		nodes: func(c *Cluster) []Node {
			out := make([]Node, len(c.ZooKeeper))
			for i, m := range c.ZooKeeper {
				out[i] = m
			}
			return out
		},
		need:         func(n *Needs, _ int) { n.ZooKeeper = true },
		hostPort:     splitHostPort("ZooKeeper server"),
		withHostPort: func(_, addr string) (string, error) { return addr, nil },
	},
	strategies.BackendNATS: {
		kind: strategies.BackendNATS, noun: "NATS server",
		flag: "--nats-url", env: EnvNATSURL,
		// One URL per server; a comma-separated list names a cluster.
		endpoints:  func(ep Endpoints) []string { return splitList(ep.NATSURL) },
		fromConfig: func(c strategies.Config) []string { return splitList(c.NATSURL) },
		toConfig:   func(c *strategies.Config, e []string) { c.NATSURL = strings.Join(e, ",") },
		nodes: func(c *Cluster) []Node {
			if c.nats == nil {
				return nil
			}
			return []Node{c.nats}
		},
		need:         func(n *Needs, _ int) { n.NATS = true },
		hostPort:     hostOfNATSURL,
		withHostPort: replaceNATSHost,
		// lockbench's NATS server comes back without its JetStream store
		// (NATSServer.Start).
		forgets: true,
	},
	strategies.BackendMySQL: {
		kind: strategies.BackendMySQL, noun: "MariaDB server",
		flag: "--mysql-dsn", env: EnvMySQLDSN,
		endpoints:  func(ep Endpoints) []string { return nonEmpty(ep.MySQLDSN) },
		fromConfig: func(c strategies.Config) []string { return nonEmpty(c.MySQLDSN) },
		toConfig: func(c *strategies.Config, e []string) {
			c.MySQLDSN = ""
			if len(e) > 0 {
				c.MySQLDSN = e[0]
			}
		},
		nodes: func(c *Cluster) []Node {
			if c.MariaDB == nil {
				return nil
			}
			return []Node{c.MariaDB}
		},
		need:         func(n *Needs, _ int) { n.MySQL = true },
		hostPort:     hostOfMySQLDSN,
		withHostPort: replaceMySQLHost,
		// Not forgets, as Postgres: GET_LOCK's locks die with their
		// sessions, so a restart loses them as any cut connection does,
		// and partition mode=reset stages that without a restart's
		// timing (the caught holder must outlast the server's start).
	},
}

// Forgets reports whether a node of kind, killed and started again by
// lockbench, comes back without the locks it held (Redis without
// persistence): what restart-node needs.
func Forgets(kind strategies.Backend) bool { b, ok := backends[kind]; return ok && b.forgets }

// MovableClock reports whether lockbench can move the clock of a node of
// kind while it runs (Options.Faketime): what clock-jump needs.
func MovableClock(kind strategies.Backend) bool { b, ok := backends[kind]; return ok && b.clock }

// lookupBackend returns the descriptor of kind, or an error naming it.
func lookupBackend(kind strategies.Backend) (*backend, error) {
	b, ok := backends[kind]
	if !ok {
		return nil, fmt.Errorf("servers: unknown backend %q", kind)
	}
	return b, nil
}

func nonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}

func splitHostPort(what string) func(string) (string, error) {
	return func(ep string) (string, error) {
		if _, _, err := net.SplitHostPort(ep); err != nil {
			return "", fmt.Errorf("%s %q is not host:port", what, ep)
		}
		return ep, nil
	}
}

// hostOfURL returns the host:port of an etcd endpoint (a URL or host:port).
func hostOfURL(ep string) (string, error) {
	if !strings.Contains(ep, "://") {
		return splitHostPort("etcd endpoint")(ep)
	}
	u, err := url.Parse(ep)
	if err != nil || u.Port() == "" {
		return "", fmt.Errorf("etcd endpoint %q has no host:port", Redact(ep))
	}
	return u.Host, nil
}

func replaceURLHost(ep, addr string) (string, error) {
	if !strings.Contains(ep, "://") {
		return addr, nil
	}
	u, err := url.Parse(ep)
	if err != nil {
		return "", fmt.Errorf("etcd endpoint %q cannot be parsed", Redact(ep))
	}
	u.Host = addr
	return u.String(), nil
}

// hostOfNATSURL returns the host:port of a NATS URL (nats://[user:pass@]host:port,
// or host:port). Errors never quote the URL: it may hold a password or a
// token.
func hostOfNATSURL(ep string) (string, error) {
	if !strings.Contains(ep, "://") {
		return splitHostPort("NATS server")(ep)
	}
	u, err := url.Parse(ep)
	if err != nil || u.Port() == "" {
		return "", errors.New("a NATS URL has no host:port (not shown: it may hold a password or a token)")
	}
	return u.Host, nil
}

// replaceNATSHost points a NATS URL at addr, keeping its user, password or
// token.
func replaceNATSHost(ep, addr string) (string, error) {
	if !strings.Contains(ep, "://") {
		return addr, nil
	}
	u, err := url.Parse(ep)
	if err != nil {
		return "", errors.New("a NATS URL cannot be parsed (not shown: it may hold a password or a token)")
	}
	u.Host = addr
	return u.String(), nil
}

// hostOfMySQLDSN returns the host:port of a go-sql-driver/mysql DSN.
// Errors never quote the DSN: it may hold a password.
func hostOfMySQLDSN(dsn string) (string, error) {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return "", errors.New("the MySQL DSN cannot be parsed (not shown: it may hold a password); want [user[:password]@]tcp(host:port)/dbname")
	}
	if cfg.Net != "tcp" && cfg.Net != "tcp4" && cfg.Net != "tcp6" {
		return "", fmt.Errorf("the MySQL DSN names protocol %q; want tcp(host:port)", cfg.Net)
	}
	if _, _, err := net.SplitHostPort(cfg.Addr); err != nil {
		return "", errors.New("the MySQL DSN has no host:port (not shown: it may hold a password)")
	}
	return cfg.Addr, nil
}

// replaceMySQLHost points a go-sql-driver/mysql DSN at addr, keeping its
// user, password, database and parameters.
func replaceMySQLHost(dsn, addr string) (string, error) {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return "", errors.New("the MySQL DSN cannot be parsed (not shown: it may hold a password)")
	}
	cfg.Net, cfg.Addr = "tcp", addr
	return cfg.FormatDSN(), nil
}

// hostOfDSN returns the host:port of a Postgres DSN (URL or keyword/value
// form). Errors never quote the DSN: it may hold a password.
func hostOfDSN(dsn string) (string, error) {
	cfg, err := pgconn.ParseConfig(dsn)
	if err != nil {
		return "", errors.New("the Postgres DSN cannot be parsed (not shown: it may hold a password)")
	}
	if strings.HasPrefix(cfg.Host, "/") || len(cfg.Fallbacks) > 0 {
		return "", errors.New("the Postgres DSN names a Unix socket or several hosts; want one TCP host:port")
	}
	return net.JoinHostPort(cfg.Host, fmt.Sprint(cfg.Port)), nil
}

// replaceDSNHost points dsn at addr. In keyword/value form a later keyword
// overrides an earlier one, so appending is enough.
func replaceDSNHost(dsn, addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", err
	}
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			return "", errors.New("the Postgres DSN cannot be parsed (not shown: it may hold a password)")
		}
		u.Host = addr
		return u.String(), nil
	}
	return fmt.Sprintf("%s host=%s port=%s", dsn, host, port), nil
}
