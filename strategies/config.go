package strategies

import "time"

// DefaultTTL is the lock TTL used when Config.TTL is zero: 2 seconds.
const DefaultTTL = 2 * time.Second

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
	// EtcdEndpoints are etcd client URLs.
	EtcdEndpoints []string
	// PostgresDSN is a pgx connection string.
	PostgresDSN string
	// ZKServers are host:port addresses of the servers of one ZooKeeper
	// ensemble.
	ZKServers []string
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
	return c
}
