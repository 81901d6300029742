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
	// RedisAddrs are host:port addresses of independent Redis masters. Single
	// node strategies use the first one; redlock uses all of them.
	RedisAddrs []string
	// RedisPassword is the AUTH password for every Redis node, if any.
	RedisPassword string
	// RedisSentinels are host:port addresses of the Sentinels that watch a
	// replicated Redis (one primary and its replicas). When set, single-node
	// strategies find the primary through them, as a production client
	// does (go-redis' failover client), and follow it after a failover;
	// RedisAddrs then only name the group's nodes for faults.
	RedisSentinels []string
	// RedisMaster is the name the Sentinels know the primary by; the
	// default is DefaultRedisMaster.
	RedisMaster string
	// RedisWait, when above 0, makes single-node Redis strategies call WAIT
	// RedisWait after taking a lock, on the connection that took it (as
	// Redisson does): fewer acknowledging replicas count as not acquired.
	// Renewals and releases do not wait. It needs replicas (RedisSentinels).
	RedisWait int
	// RedisWaitTimeout is WAIT's timeout; the default is the TTL divided by
	// RedisWaitDivisor.
	RedisWaitTimeout time.Duration
	// EtcdEndpoints are etcd client URLs.
	EtcdEndpoints []string
	// PostgresDSN is a pgx connection string.
	PostgresDSN string
	// ZKServers are host:port addresses of the servers of one ZooKeeper
	// ensemble.
	ZKServers []string
	// NATSURL is the URL of a NATS server with JetStream (the queue
	// strategy); user and password or a token may be in it.
	NATSURL string
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
