package servers

// This file fixes the package's API so other packages can be written against
// it while it is implemented. Keep the names; implement the bodies.

import (
	"context"
	"io"
	"time"
)

// Environment variables naming existing servers (SPEC §5). When set, lockbench
// uses them and starts nothing of that kind.
const (
	EnvRedisAddrs    = "LOCKBENCH_REDIS_ADDRS"    // comma-separated host:port
	EnvRedisPassword = "LOCKBENCH_REDIS_PASSWORD" // optional AUTH password
	EnvEtcdEndpoints = "LOCKBENCH_ETCD_ENDPOINTS" // comma-separated URLs
	EnvPostgresDSN   = "LOCKBENCH_PG_DSN"         // pgx connection string
)

// Endpoints says where the servers are.
type Endpoints struct {
	RedisAddrs    []string
	RedisPassword string
	EtcdEndpoints []string
	PostgresDSN   string
}

// Needs says which servers a run needs.
type Needs struct {
	Redis    int  // Redis nodes (0: none)
	Etcd     bool // an etcd cluster
	Postgres bool
}

// Options configure locally started servers.
type Options struct {
	// EtcdMembers is the etcd cluster size: 1 (default) or 3.
	EtcdMembers int
	// RedisAOF turns on appendonly persistence (off by default: a restarted
	// node comes back empty).
	RedisAOF bool
	// Faketime starts every Redis node under libfaketime so that
	// (*Redis).SetClockOffset can move its clock while it runs.
	Faketime bool
	// Log receives the servers' own output; nil discards it (it is kept in
	// the temporary directory until Stop).
	Log io.Writer
}

// Cluster is a set of servers lockbench started itself: loopback only, free
// ports, one temporary directory, all stopped by Stop (and killed with the
// parent process via Pdeathsig if lockbench dies).
type Cluster struct {
	Redis    []*Redis
	Etcd     []*EtcdMember
	Postgres *Postgres
	// impl fields follow in cluster.go
	state
}

// Redis is one locally started redis-server.
type Redis struct {
	// Addr is 127.0.0.1:port; it stays the same across Kill/Start.
	Addr string
	redisState
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
	// password (trust authentication on loopback), sslmode=disable. It stays
	// the same across Kill/Start.
	DSN string
	pgState
}

// The API, implemented in the other files of the package:
var (
	_ func() Endpoints                                                              = EndpointsFromEnv
	_ func(context.Context, Needs, Options) (*Cluster, error)                       = Start
	_ func(context.Context, Needs, Endpoints, Options) (Endpoints, *Cluster, error) = Ensure
	_ func(string) string                                                           = Redact
	_ func(*Cluster) Endpoints                                                      = (*Cluster).Endpoints
	_ func(*Cluster) error                                                          = (*Cluster).Stop
	_ func(Endpoints) []string                                                      = Endpoints.Env
	_ func(*Redis) error                                                            = (*Redis).Kill
	_ func(*Redis, context.Context) error                                           = (*Redis).Start
	_ func(*Redis, time.Duration) error                                             = (*Redis).SetClockOffset
	_ func(*Redis) int                                                              = (*Redis).Pid
	_ func(*EtcdMember) error                                                       = (*EtcdMember).Kill
	_ func(*EtcdMember, context.Context) error                                      = (*EtcdMember).Start
	_ func(*Postgres) error                                                         = (*Postgres).Kill
	_ func(*Postgres, context.Context) error                                        = (*Postgres).Start
)
