package pgadvisory

import (
	"context"
	"hash/fnv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockbench/lockbench/strategies"
	"github.com/lockbench/lockbench/strategies/pgutil"
)

// Defaults. The pool's are those of the Postgres strategies, kept in
// pgutil: a database that does not answer within a couple of seconds is
// down as far as a payment is concerned, and the benchmark must report that
// rather than hang.
const (
	// DefaultMaxConns is the connection pool size of one strategy object
	// (one instance): pgutil.DefaultMaxConns, 32. A held lease keeps one
	// connection, so this is also how many locks one instance can hold at
	// once. Mind Postgres's max_connections (100 by default) when running
	// many instances.
	DefaultMaxConns = pgutil.DefaultMaxConns
	// DefaultWarmConns is how many connections New opens before it returns:
	// pgutil.DefaultWarmConns, 8, lockbench's default workers per instance.
	DefaultWarmConns = pgutil.DefaultWarmConns
	// DefaultStatementTimeout bounds each statement, including the wait for
	// a pooled connection and any connection attempt:
	// pgutil.DefaultStatementTimeout, 3s.
	DefaultStatementTimeout = pgutil.DefaultStatementTimeout
	// DefaultConnectTimeout bounds one connection attempt:
	// pgutil.DefaultConnectTimeout, 5s, longer than DefaultStatementTimeout
	// so that the pool can finish an attempt in the background when the
	// statement that started it gives up.
	DefaultConnectTimeout = pgutil.DefaultConnectTimeout
	// DefaultCloseTimeout bounds closing one connection (sending Terminate
	// and closing the socket): 1s.
	DefaultCloseTimeout = time.Second
)

// The statements. Both return a boolean; pg_advisory_unlock returns false
// (with a WARNING the client ignores) when the session does not hold the
// lock.
const (
	lockSQL   = `SELECT pg_try_advisory_lock($1)`
	unlockSQL = `SELECT pg_advisory_unlock($1)`
)

func init() {
	strategies.Register(strategies.Info{
		Name:         "pg-advisory",
		Order:        130,
		Color:        "#aa4499", // purple (Tol)
		Description:  "Postgres session advisory lock (pg_try_advisory_lock) on a connection held for the lease; no TTL, no token",
		Need:         strategies.Need{Backend: strategies.BackendPostgres, Nodes: 1},
		CrossProcess: true,
		SessionBound: true,
		New:          strategies.FactoryOf(New),
	})
}

// LockID is the advisory lock id of key: its FNV-64a hash, as a bigint (the
// same 64 bits read as signed). It is the same in every process, so
// instances written in other languages lock the same ids if they hash the
// same way.
func LockID(key string) int64 {
	h := fnv.New64a()
	h.Write([]byte(key))
	return int64(h.Sum64())
}

// Advisory locks keys with session advisory locks in the Postgres database
// at Config.PostgresDSN. It is safe for concurrent use.
type Advisory struct {
	pool *pgxpool.Pool

	mu     sync.Mutex
	held   map[*lease]struct{} // leases holding a connection
	closed bool
}

var _ strategies.Strategy = (*Advisory)(nil)

// New connects to cfg.PostgresDSN with a pool of DefaultMaxConns
// connections, checks within DefaultStatementTimeout that the database
// answers, and opens DefaultWarmConns connections. cfg.TTL is not used: the
// lock lives as long as its session.
func New(ctx context.Context, cfg strategies.Config) (*Advisory, error) {
	pcfg, err := pgutil.PoolConfig("pgadvisory", cfg.PostgresDSN)
	if err != nil {
		return nil, err
	}
	if _, set := pcfg.ConnConfig.RuntimeParams["application_name"]; !set && cfg.Owner != "" {
		// Names the instance in pg_stat_activity, next to its locks in
		// pg_locks.
		pcfg.ConnConfig.RuntimeParams["application_name"] = "lockbench pg-advisory " + cfg.Owner
	}
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return nil, classify(ctx, "connect", err)
	}
	pctx, cancel := context.WithTimeout(ctx, DefaultStatementTimeout)
	err = pool.Ping(pctx)
	cancel()
	if err != nil {
		pool.Close()
		return nil, classify(ctx, "connect", err)
	}
	pgutil.Warm(ctx, pool, DefaultWarmConns)
	return &Advisory{pool: pool, held: map[*lease]struct{}{}}, nil
}

// Acquire makes one attempt at key's lock on a pooled connection. It returns
// strategies.ErrNotAcquired when another session holds the lock, and an
// error wrapping strategies.ErrUnavailable when the database cannot be
// reached within DefaultStatementTimeout. An attempt on a connection that
// died while idle (pgx closed it on a transport error or a FATAL, before any
// deadline) is made again on another, up to DefaultMaxConns times: a lock the
// dead session may have been granted died with it.
func (a *Advisory) Acquire(ctx context.Context, key string) (strategies.Lease, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	a.mu.Lock()
	closed := a.closed
	a.mu.Unlock()
	if closed {
		return nil, errClosed
	}
	id := LockID(key)
	sctx, cancel := context.WithTimeout(ctx, DefaultStatementTimeout)
	defer cancel()
	for attempt := 0; ; attempt++ {
		c, err := a.pool.Acquire(sctx)
		if err != nil {
			return nil, classify(ctx, "acquire "+key, err)
		}
		var ok bool
		if err := c.QueryRow(sctx, lockSQL, id).Scan(&ok); err != nil {
			dead := c.Conn().IsClosed() && !pgconn.Timeout(err)
			// The server may have granted the lock before the error (a
			// reply lost to a deadline): only ending the session is sure to
			// give it up.
			destroy(c)
			if dead && attempt < DefaultMaxConns && sctx.Err() == nil {
				continue
			}
			return nil, classify(ctx, "acquire "+key, err)
		}
		if !ok {
			c.Release()
			return nil, strategies.ErrNotAcquired
		}
		l := &lease{a: a, key: key, id: id, conn: c}
		if !a.track(l) {
			destroy(c)
			return nil, errClosed
		}
		return l, nil
	}
}

// track records l as holding a connection; false when the strategy is
// closed (Close would not see l).
func (a *Advisory) track(l *lease) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return false
	}
	a.held[l] = struct{}{}
	return true
}

func (a *Advisory) untrack(l *lease) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.held, l)
}

// Close ends every session of the strategy, the ones leases hold too: their
// locks are freed at once, as a crashed process's are when the kernel
// closes its sockets. It then closes the pool, waiting for statements in
// flight (each bounded by DefaultStatementTimeout). A lease's Release after
// Close returns strategies.ErrNotOwner.
func (a *Advisory) Close() error {
	a.mu.Lock()
	a.closed = true
	held := a.held
	a.held = map[*lease]struct{}{}
	a.mu.Unlock()
	for l := range held {
		if c := l.take(); c != nil {
			destroy(c)
		}
	}
	// pgxpool.Close waits until every acquired connection is back; the
	// held ones were just taken out, and an Acquire in flight returns its
	// own within its statement timeout.
	a.pool.Close()
	return nil
}

// destroy closes c's connection and takes it out of the pool for good: it
// is dead, or its session may hold a lock nobody tracks any more.
func destroy(c *pgxpool.Conn) {
	conn := c.Hijack()
	ctx, cancel := context.WithTimeout(context.Background(), DefaultCloseTimeout)
	defer cancel()
	_ = conn.Close(ctx) // closes the socket even when Terminate cannot be sent
}
