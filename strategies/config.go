package strategies

import "time"

// Config defaults.
const (
	// DefaultTTL is the lock TTL used when Config.TTL is zero: 2 seconds.
	DefaultTTL = 2 * time.Second
	// DefaultRedisMaster is the name Sentinels know the primary by when
	// Config.RedisMaster is empty: "lockbench".
	DefaultRedisMaster = "lockbench"
	// RedisWaitDivisor sets WAIT's timeout when Config.RedisWaitTimeout is
	// zero: the TTL divided by 10.
	RedisWaitDivisor = 10
)

// Config is what a strategy is built from. Each strategy reads the fields it
// needs and ignores the rest.
type Config struct {
	// TTL is how long a lock lives without its holder (the Redis PX, the etcd
	// session TTL, the Postgres lease). The default is DefaultTTL.
	TTL time.Duration
	// Owner names the instance the strategy belongs to; it is part of every
	// owner value the strategy writes, so a lock can be traced to its holder.
	Owner string
	// AcquireTimeout is how long a caller lets Acquire take (the
	// scenario's acquire timeout), for strategies that must know it when
	// they start (an adapter's library client); zero when not given.
	AcquireTimeout time.Duration
	// Workers is how many calls the strategy may have in flight at once
	// (the instance's workers); zero when not given.
	Workers int
	// RunDir is the run directory when the strategy runs within a run:
	// a strategy that starts processes (an adapter) writes their logs
	// under it. Empty: the logs are discarded.
	RunDir string
	// RedisAddrs are the addresses of independent Redis masters. Single
	// node strategies use the first one; redlock uses all of them. An entry
	// is host:port, or a URL with an ACL user and password:
	// redis://user:password@host:port, or rediss://… for TLS (see
	// RedisCACert). A URL's password is percent-encoded as in any URL;
	// redis://:password@host:port logs in as the default user.
	RedisAddrs []string
	// RedisPassword is the AUTH password for every Redis node whose entry
	// has none of its own, if any; with RedisSentinels, the primary's.
	RedisPassword string
	// RedisCACert is the path of a PEM file of the CA certificates that
	// verify the Redis nodes and Sentinels reached with rediss:// entries;
	// empty: the system's roots.
	RedisCACert string
	// RedisSentinels are the addresses of the Sentinels that watch a
	// replicated Redis (one primary and its replicas). When set, single-node
	// strategies find the primary through them, as a production client
	// does (go-redis' failover client), and follow it after a failover;
	// RedisAddrs then only name the group's nodes for faults. Entries are
	// as RedisAddrs' (host:port or redis[s]://user:password@host:port, the
	// Sentinels' own ACL user), and all use TLS or none do.
	RedisSentinels []string
	// RedisMaster is the name the Sentinels know the primary by; the
	// default is DefaultRedisMaster. It may be a URL that also gives the
	// primary's ACL user and password, redis://user:password@name (the
	// scheme is ignored: the Sentinels' entries decide on TLS).
	RedisMaster string
	// RedisWait, when above 0, makes single-node Redis strategies call WAIT
	// RedisWait after taking a lock, on the connection that took it (as
	// Redisson does): fewer acknowledging replicas count as not acquired.
	// Renewals and releases do not wait. It needs replicas (RedisSentinels).
	RedisWait int
	// RedisWaitTimeout is WAIT's timeout; the default is the TTL divided by
	// RedisWaitDivisor.
	RedisWaitTimeout time.Duration
	// EtcdEndpoints are etcd client URLs: https:// ones use TLS (see
	// EtcdCACert).
	EtcdEndpoints []string
	// EtcdCACert is the path of a PEM file of the CA certificates that
	// verify the etcd members; empty: the system's roots.
	EtcdCACert string
	// EtcdCert and EtcdKey are the paths of a client certificate and its
	// key (PEM), for members that check client certificates (mutual TLS).
	EtcdCert, EtcdKey string
	// EtcdUser and EtcdPassword log in to a cluster with auth enabled.
	EtcdUser, EtcdPassword string
	// PostgresDSN is a pgx connection string; TLS and the password are
	// its own (sslmode=verify-full, sslrootcert=…, password=…).
	PostgresDSN string
	// ZKServers are host:port addresses of the servers of one ZooKeeper
	// ensemble.
	ZKServers []string
	// NATSURL is the URL of a NATS server with JetStream (the queue
	// strategy); user and password or a token may be in it.
	NATSURL string
	// MySQLDSN is a go-sql-driver/mysql data source name of a MariaDB or
	// MySQL server, user:password@tcp(host:port)/dbname?params; TLS and
	// the password are its own (tls=…, the password in it).
	MySQLDSN string
}

// ttl returns c.TTL or DefaultTTL.
func (c Config) ttl() time.Duration {
	if c.TTL <= 0 {
		return DefaultTTL
	}
	return c.TTL
}

// WithDefaults returns c with zero fields set to their defaults.
func (c Config) WithDefaults() Config {
	c.TTL = c.ttl()
	if c.Owner == "" {
		c.Owner = "lockbench"
	}
	if c.RedisMaster == "" && len(c.RedisSentinels) > 0 {
		c.RedisMaster = DefaultRedisMaster
	}
	if c.RedisWait > 0 && c.RedisWaitTimeout <= 0 {
		c.RedisWaitTimeout = max(c.TTL/RedisWaitDivisor, time.Millisecond)
	}
	return c
}
