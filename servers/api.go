package servers

import (
	"io"
)

// Environment variables naming existing servers. When set, lockbench
// uses them and starts nothing of that kind.
const (
	EnvRedisAddrs    = "LOCKBENCH_REDIS_ADDRS"    // comma-separated host:port
	EnvRedisPassword = "LOCKBENCH_REDIS_PASSWORD" // optional AUTH password
	EnvEtcdEndpoints = "LOCKBENCH_ETCD_ENDPOINTS" // comma-separated URLs
	EnvPostgresDSN   = "LOCKBENCH_PG_DSN"         // pgx connection string
	EnvZKServers     = "LOCKBENCH_ZK_SERVERS"     // comma-separated host:port
	EnvNATSURL       = "LOCKBENCH_NATS_URL"       // nats://[user:pass@]host:port, comma-separated for a cluster
	EnvMySQLDSN      = "LOCKBENCH_MYSQL_DSN"      // user:password@tcp(host:port)/db (go-sql-driver/mysql)
	// EnvRedisSentinels names the Sentinels of a replicated Redis
	// (comma-separated host:port): single-node Redis strategies then find
	// the primary through them.
	EnvRedisSentinels = "LOCKBENCH_REDIS_SENTINELS"
	// EnvRedisMaster is the name those Sentinels know the primary by
	// (default strategies.DefaultRedisMaster), or a URL naming it with the
	// primary's own ACL user and password: rediss://user:pass@name.
	EnvRedisMaster = "LOCKBENCH_REDIS_MASTER"
)

// Environment variables for servers that need TLS or authentication (a
// user's own clusters; the servers lockbench starts need none). Redis users
// and passwords are in the rediss://user:pass@host:port entries of
// EnvRedisAddrs and EnvRedisSentinels; Postgres takes everything from its
// DSN (sslmode=verify-full, sslrootcert=…, password=…).
const (
	// EnvRedisCACert is a PEM file of the CA certificates that verify the
	// Redis nodes and Sentinels reached with rediss:// (default: the
	// system's roots).
	EnvRedisCACert = "LOCKBENCH_REDIS_CACERT"
	// EnvEtcdCACert is a PEM file of the CA certificates that verify the
	// etcd members at https:// endpoints (default: the system's roots).
	EnvEtcdCACert = "LOCKBENCH_ETCD_CACERT"
	// EnvEtcdCert and EnvEtcdKey are a client certificate and its key
	// (PEM), for members that check client certificates (mutual TLS).
	EnvEtcdCert = "LOCKBENCH_ETCD_CERT"
	EnvEtcdKey  = "LOCKBENCH_ETCD_KEY"
	// EnvEtcdUser and EnvEtcdPassword log in to an etcd cluster with auth
	// enabled.
	EnvEtcdUser     = "LOCKBENCH_ETCD_USER"
	EnvEtcdPassword = "LOCKBENCH_ETCD_PASSWORD"
)

// Endpoints says where the servers are and how to log in to them.
type Endpoints struct {
	// RedisAddrs are host:port or redis[s]://[user:password@]host:port.
	RedisAddrs    []string
	RedisPassword string
	// RedisCACert is EnvRedisCACert.
	RedisCACert string
	// RedisSentinels and RedisMaster name a replicated Redis (one primary
	// behind Sentinels), used by the single-node Redis strategies instead
	// of RedisAddrs[0]; RedisAddrs, if any, remain independent masters for
	// multi-node strategies (redlock). Entries may be URLs as RedisAddrs',
	// and RedisMaster redis[s]://user:pass@name (see strategies.Config).
	RedisSentinels []string
	RedisMaster    string
	EtcdEndpoints  []string
	// EtcdCACert, EtcdCert, EtcdKey, EtcdUser and EtcdPassword are
	// EnvEtcdCACert, EnvEtcdCert, EnvEtcdKey, EnvEtcdUser and
	// EnvEtcdPassword.
	EtcdCACert, EtcdCert, EtcdKey string
	EtcdUser, EtcdPassword        string
	PostgresDSN                   string
	ZKServers                     []string
	// NATSURL is a NATS server URL (JetStream enabled), for the queue
	// strategy; user and password or a token may be in it.
	NATSURL string
	// MySQLDSN is a MariaDB or MySQL server, as a go-sql-driver/mysql DSN
	// (user:password@tcp(host:port)/dbname), for mysql-get-lock.
	MySQLDSN string
}

// Needs says which servers a run needs.
type Needs struct {
	Redis     int  // Redis nodes (0: none)
	Etcd      bool // an etcd cluster
	Postgres  bool
	ZooKeeper bool // a ZooKeeper ensemble
	NATS      bool // a NATS server with JetStream
	MySQL     bool // a MariaDB server (the MySQL backend)
}

// Options configure locally started servers.
type Options struct {
	// EtcdMembers is the etcd cluster size: 1 (default) or 3.
	EtcdMembers int
	// ZKMembers is the ZooKeeper ensemble size: 1 (default) or 3.
	ZKMembers int
	// RedisAOF turns on appendonly persistence (off by default: a restarted
	// node comes back empty).
	RedisAOF bool
	// RedisTopology is how the Redis nodes are laid out: independent
	// masters (TopologyMasters, the default: as many as Needs.Redis), or
	// TopologySentinel: one primary, SentinelReplicas replicas and
	// SentinelCount Sentinels, whatever Needs.Redis.
	RedisTopology Topology
	// PgTopology is how Postgres is laid out: one server (PgSingle, the
	// default) or PgReplica, a primary with a streaming hot standby,
	// reached through one DSN naming both (target_session_attrs
	// read-write).
	PgTopology PgTopology
	// PgSync makes the replica topology's primary wait on every commit
	// for its standby (synchronous_standby_names); it needs PgReplica.
	PgSync bool
	// Secure, when set, starts Redis, etcd and Postgres with TLS and
	// authentication, for tests of the clients (see Secure); nil, the
	// default, starts them plain.
	Secure *Secure
	// Faketime starts every Redis node under libfaketime so that
	// (*Redis).SetClockOffset can move its clock while it runs.
	Faketime bool
	// Log receives the servers' own output; nil discards it (it is kept in
	// the temporary directory until Stop).
	Log io.Writer
	// Host is the address the servers' clients reach them at, and their
	// endpoints name: for instances on agents, an address of this machine
	// they reach (the host side of a veth pair, say). Redis nodes and
	// Sentinels, etcd's client URLs, ZooKeeper's client port and NATS
	// listen on it; Postgres listens on it beside 127.0.0.1 and admits
	// the clients on its subnet; the members' own traffic among
	// themselves stays on 127.0.0.1. It must be loopback or private
	// (CheckHost); the default, "", is 127.0.0.1.
	Host string
}

// Cluster is a set of servers lockbench started itself: loopback only, free
// ports, one temporary directory, all stopped by Stop (and killed with the
// parent process via Pdeathsig if lockbench dies).
type Cluster struct {
	// Redis are the Redis nodes: the independent masters, or with the
	// sentinel topology the replicated group's nodes, the first primary
	// first.
	Redis []*Redis
	// Sentinels watch the group with the sentinel topology; nil otherwise.
	Sentinels []*Sentinel
	Etcd      []*EtcdMember
	Postgres  *Postgres
	// PostgresStandby is the replica topology's standby, streaming from
	// Postgres; nil otherwise.
	PostgresStandby *Postgres
	ZooKeeper       []*ZKMember
	// MariaDB is the MySQL backend's server; nil when none was started.
	MariaDB *MariaDB
	// impl fields follow in cluster.go
	state
}

// Redis is one locally started redis-server.
type Redis struct {
	// Addr is 127.0.0.1:port; it stays the same across Kill/Start.
	Addr string
	redisState
}

// Sentinel is one locally started Redis Sentinel (redis-server
// --sentinel) of the sentinel topology.
type Sentinel struct {
	// Addr is 127.0.0.1:port; it stays the same across Kill/Start.
	Addr string
	sentinelState
}

// EtcdMember is one locally started etcd member.
type EtcdMember struct {
	// ClientURL is http://127.0.0.1:port.
	ClientURL string
	etcdState
}

// Postgres is a locally started PostgreSQL server.
type Postgres struct {
	// DSN is a pgx connection string: database and superuser postgres, no
	// password (trust authentication on loopback), sslmode=disable; with
	// Options.Secure, Secure.User and its password, sslmode=verify-full and
	// the CA as sslrootcert. It stays the same across Kill/Start.
	DSN string
	pgState
}

// ZKMember is one locally started ZooKeeper server (Debian's zookeeper
// package, run by java): an ensemble of one by default.
type ZKMember struct {
	// Addr is the client address, 127.0.0.1:port; it stays the same across
	// Kill/Start.
	Addr string
	zkState
}

// MariaDB is a locally started MariaDB server (Debian's mariadb-server),
// the MySQL backend: a user lockbench with a generated password and its
// own database, reached over TCP.
type MariaDB struct {
	// DSN is a go-sql-driver/mysql DSN, lockbench:PASSWORD@tcp(host:port)/lockbench;
	// it stays the same across Kill/Start.
	DSN string
	mariaState
}

// Every kind of locally started server is a Node.
var (
	_ Node     = (*Redis)(nil)
	_ Node     = (*EtcdMember)(nil)
	_ Node     = (*Postgres)(nil)
	_ Node     = (*ZKMember)(nil)
	_ Node     = (*Sentinel)(nil)
	_ Node     = (*MariaDB)(nil)
	_ Clock    = (*Redis)(nil)
	_ Volatile = (*Redis)(nil)
)
