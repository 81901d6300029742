package pgutil

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Defaults of the pooled Postgres strategies (pg-onconflict, pg-advisory),
// which those packages re-export under the same names. The timeouts are
// short on purpose: a database that does not answer within a couple of
// seconds is down as far as a payment is concerned, and the benchmark must
// report that rather than hang.
const (
	// DefaultMaxConns is the connection pool size of one strategy object
	// (one instance): 32, so that an instance's workers rarely queue for a
	// connection. The pool opens connections on demand up to this size.
	// Mind Postgres's max_connections (100 by default) when running many
	// instances.
	DefaultMaxConns = 32
	// DefaultWarmConns is how many connections a strategy's New opens
	// before it returns (Warm): 8, lockbench's default workers per
	// instance, so that the first statements do not all wait for new
	// server processes at once (a connection costs tens of milliseconds of
	// server CPU).
	DefaultWarmConns = 8
	// DefaultStatementTimeout bounds each statement, including the wait for
	// a pooled connection and any connection attempt: 3s, so a stopped
	// server is reported within that.
	DefaultStatementTimeout = 3 * time.Second
	// DefaultConnectTimeout bounds one connection attempt: 5s. It is longer
	// than DefaultStatementTimeout on purpose: the pool finishes an attempt
	// in the background when the statement that started it gives up, so a
	// server that is slow to start backends (a burst of new connections on
	// a busy machine) still gets its connections into the pool, instead of
	// having each one abandoned and started again.
	DefaultConnectTimeout = 5 * time.Second
)

// CheckDSN returns the error strategy name reports when it has no
// Config.PostgresDSN, and nil when dsn is set.
func CheckDSN(name, dsn string) error {
	if dsn == "" {
		return errors.New(name + ": no Config.PostgresDSN")
	}
	return nil
}

// ConnConfig checks and parses dsn (Config.PostgresDSN) for strategy name.
// Its errors never quote the DSN: it may hold a password.
func ConnConfig(name, dsn string) (*pgx.ConnConfig, error) {
	if err := CheckDSN(name, dsn); err != nil {
		return nil, err
	}
	ccfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, invalidDSN(name)
	}
	return ccfg, nil
}

// PoolConfig checks and parses dsn (Config.PostgresDSN) for strategy name
// and sets the pool to DefaultMaxConns connections, each attempt bounded by
// DefaultConnectTimeout. Its errors never quote the DSN: it may hold a
// password.
func PoolConfig(name, dsn string) (*pgxpool.Config, error) {
	if err := CheckDSN(name, dsn); err != nil {
		return nil, err
	}
	pcfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, invalidDSN(name)
	}
	pcfg.MaxConns = DefaultMaxConns
	pcfg.ConnConfig.ConnectTimeout = DefaultConnectTimeout
	return pcfg, nil
}

// invalidDSN is the error for a DSN pgx cannot parse. pgx redacts passwords
// in its parse errors only on a best-effort basis, and the cause may quote
// the whole string: say nothing of it.
func invalidDSN(name string) error {
	return errors.New(name + ": Config.PostgresDSN is not a valid connection string (not shown: it may hold a password)")
}

// Warm opens up to n connections of pool, one after another (a burst of
// new connections is what makes a server slow to accept them), within
// DefaultStatementTimeout in all, and returns them to the pool. Failures
// are left for the first statements to meet.
func Warm(ctx context.Context, pool *pgxpool.Pool, n int) {
	wctx, cancel := context.WithTimeout(ctx, DefaultStatementTimeout)
	defer cancel()
	var conns []*pgxpool.Conn
	for range n {
		c, err := pool.Acquire(wctx)
		if err != nil {
			break
		}
		conns = append(conns, c)
	}
	for _, c := range conns {
		c.Release()
	}
}
