package redisutil

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/lockbench/lockbench/strategies"
)

// Client defaults. They are short on purpose: a lock server that does not
// answer within a second is down as far as a payment is concerned, and the
// benchmark must report that rather than hang.
const (
	// DefaultDialTimeout bounds one connection attempt: 1s.
	DefaultDialTimeout = time.Second
	// DefaultIOTimeout bounds each socket read and write: 1s.
	DefaultIOTimeout = time.Second
	// DefaultPoolTimeout bounds the wait for a free pooled connection: 1s.
	DefaultPoolTimeout = time.Second
	// DefaultPoolSize is the connection pool size per node: 256, so that many
	// concurrent workers never queue on the client (the harness must not be
	// the bottleneck).
	DefaultPoolSize = 256
	// DefaultMinIdleConns is how many connections a client opens up front: 8.
	DefaultMinIdleConns = 8
	// DefaultPingTimeout bounds the connectivity check in Dial: 2s.
	DefaultPingTimeout = 2 * time.Second
)

// Options returns client options for one Redis node at addr (host:port)
// that needs password, if any, for the default user. ClientOptions builds
// them from a Config entry (URL, ACL user, TLS).
func Options(addr, password string) *redis.Options {
	return &redis.Options{
		Addr:         addr,
		Password:     password,
		DialTimeout:  DefaultDialTimeout,
		ReadTimeout:  DefaultIOTimeout,
		WriteTimeout: DefaultIOTimeout,
		PoolTimeout:  DefaultPoolTimeout,
		PoolSize:     DefaultPoolSize,
		// Open a few connections up front, so a run does not start with a
		// dial storm (Redlock: every worker × every node) that times rounds
		// out.
		MinIdleConns: DefaultMinIdleConns,
		// No retries: see the package comment. DialerRetries 1 is a single
		// attempt (0 would mean go-redis' default of 5).
		MaxRetries:    -1,
		DialerRetries: 1,
		// Apply ctx deadlines to socket I/O, so per-call timeouts hold.
		ContextTimeoutEnabled: true,
		// Keep the handshake to HELLO: no CLIENT SETINFO, no maintenance
		// notifications (not offered by a local redis-server anyway).
		DisableIdentity: true,
		// RESP2: with RESP3, go-redis peeks the socket for push
		// notifications before every command, an extra syscall each time
		// (about 12% of a lock cycle's CPU here). Locks need no pushes.
		Protocol:                 2,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
		Dialer:                   dialIdleChecked,
	}
}

// Dial returns a client for the node of entry (a Config.RedisAddrs entry,
// see ClientOptions) after checking that it answers PING within
// DefaultPingTimeout, and loads scripts into the node's script cache so the
// first EVALSHA finds them. On failure it closes the client and returns an
// error that wraps strategies.ErrUnavailable when the node is unreachable.
// Errors name the node by host:port only.
func Dial(ctx context.Context, entry string, cfg strategies.Config, scripts ...*redis.Script) (*redis.Client, error) {
	o, err := ClientOptions(entry, cfg)
	if err != nil {
		return nil, err
	}
	c := redis.NewClient(o)
	if err := ready(ctx, c, scripts); err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("connect: %w", Classify(ctx, EndpointName(entry), err))
	}
	return c, nil
}

// FailoverOptions returns client options for the primary of the replicated
// Redis of cfg: the one the Sentinels of cfg.RedisSentinels know as
// cfg.RedisMaster. The settings are Options', for the primary and the
// Sentinels alike; logins and TLS are as the package doc's "TLS and auth"
// says. go-redis' failover client drops its connections to the old primary
// when the Sentinels announce a new one (+switch-master).
func FailoverOptions(cfg strategies.Config) (*redis.FailoverOptions, error) {
	master, err := ParseMaster(cfg.RedisMaster)
	if err != nil {
		return nil, err
	}
	if master.Name == "" {
		master.Name = strategies.DefaultRedisMaster
	}
	if len(cfg.RedisSentinels) == 0 {
		return nil, errors.New("redisutil: no Sentinel in Config.RedisSentinels")
	}
	var first Endpoint
	addrs := make([]string, len(cfg.RedisSentinels))
	for i, entry := range cfg.RedisSentinels {
		e, err := ParseEndpoint(entry)
		if err != nil {
			return nil, err
		}
		if i == 0 {
			first = e
		} else if e.TLS != first.TLS || e.User != first.User || e.Password != first.Password {
			return nil, fmt.Errorf("redisutil: Sentinel %s differs from %s in TLS or login; one client needs one of each", e.Addr, first.Addr)
		}
		addrs[i] = e.Addr
	}
	o := Options("", cfg.RedisPassword)
	fo := &redis.FailoverOptions{
		MasterName:            master.Name,
		SentinelAddrs:         addrs,
		SentinelUsername:      first.User,
		SentinelPassword:      first.Password,
		Password:              o.Password,
		DialTimeout:           o.DialTimeout,
		ReadTimeout:           o.ReadTimeout,
		WriteTimeout:          o.WriteTimeout,
		PoolTimeout:           o.PoolTimeout,
		PoolSize:              o.PoolSize,
		MinIdleConns:          o.MinIdleConns,
		MaxRetries:            o.MaxRetries,
		DialerRetries:         o.DialerRetries,
		ContextTimeoutEnabled: o.ContextTimeoutEnabled,
		DisableIdentity:       o.DisableIdentity,
		Protocol:              o.Protocol,
		Dialer:                o.Dialer,
	}
	if master.HasLogin {
		fo.Username, fo.Password = master.User, master.Password
	}
	if first.TLS {
		tc, err := TLSConfig(cfg.RedisCACert)
		if err != nil {
			return nil, err
		}
		fo.TLSConfig, fo.Dialer = tc, dialTLS(tc)
	}
	return fo, nil
}

// DialFailover is Dial for the primary of the replicated Redis of cfg,
// found through its Sentinels (FailoverOptions).
func DialFailover(ctx context.Context, cfg strategies.Config, scripts ...*redis.Script) (*redis.Client, error) {
	o, err := FailoverOptions(cfg)
	if err != nil {
		return nil, err
	}
	c := redis.NewFailoverClient(o)
	if err := ready(ctx, c, scripts); err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("connect: %w", Classify(ctx, PrimaryName(o.MasterName), oneLine{err}))
	}
	return c, nil
}

// PrimaryName names the primary of a replicated Redis in errors: "primary
// lockbench (via Sentinel)".
func PrimaryName(master string) string { return "primary " + master + " (via Sentinel)" }

// ready checks that c answers PING within DefaultPingTimeout and loads
// scripts into its script cache.
func ready(ctx context.Context, c *redis.Client, scripts []*redis.Script) error {
	pctx, cancel := context.WithTimeout(ctx, DefaultPingTimeout)
	defer cancel()
	err := c.Ping(pctx).Err()
	for _, s := range scripts {
		if err != nil {
			break
		}
		err = s.Load(pctx, c).Err()
	}
	return err
}

// HealthCheckIdle is how long a pooled connection must have been idle
// before go-redis health-checks it on the way out of the pool: 1ms.
const HealthCheckIdle = time.Millisecond

// dialIdleChecked dials like go-redis' default dialer and wraps the connection
// in an idleConn.
func dialIdleChecked(ctx context.Context, network, addr string) (net.Conn, error) {
	d := net.Dialer{Timeout: DefaultDialTimeout, KeepAlive: 5 * time.Minute}
	c, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	sc, ok := c.(syscall.Conn)
	if !ok {
		return c, nil
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return c, nil
	}
	ic := &idleConn{Conn: c}
	ic.raw = idleRawConn{RawConn: raw, c: ic}
	ic.lastRead.Store(nanotime())
	return ic, nil
}

// idleConn makes go-redis' pool health check (a MSG_PEEK on the socket) cost
// nothing on a busy connection: it skips the peek when the connection read a
// reply less than HealthCheckIdle ago. The package doc's "Pool health check"
// says why that is safe.
type idleConn struct {
	net.Conn
	raw      idleRawConn
	lastRead atomic.Int64 // nanotime of the last Read's return
}

func (c *idleConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.lastRead.Store(nanotime())
	return n, err
}

// SyscallConn is what go-redis' health check peeks through.
func (c *idleConn) SyscallConn() (syscall.RawConn, error) { return c.raw, nil }

// idleRawConn's Read runs f (the peek) only on an idle connection;
// otherwise the check sees nothing wrong.
type idleRawConn struct {
	syscall.RawConn
	c *idleConn
}

func (r idleRawConn) Read(f func(fd uintptr) bool) error {
	if nanotime()-r.c.lastRead.Load() < int64(HealthCheckIdle) {
		return nil
	}
	return r.RawConn.Read(f)
}

// monoStart anchors nanotime.
var monoStart = time.Now()

// nanotime is monotonic nanoseconds since monoStart.
func nanotime() int64 { return int64(time.Since(monoStart)) }
