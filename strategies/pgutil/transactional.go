package pgutil

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lockbench/lockbench/strategies"
)

// PingTimeout bounds OpenTransactional's check that the database answers:
// 2 seconds.
const PingTimeout = 2 * time.Second

// Transactional is the strategy object of a transactional strategy
// (strategies.Info.Transactional): it takes no lock, since each delivery is
// one transaction the load generator runs on the Postgres store.
type Transactional struct{}

var _ strategies.Strategy = Transactional{}

// OpenTransactional checks that the database at dsn answers within
// PingTimeout, so that a down server is reported when the
// strategy is built, as every other strategy's is. Errors never quote the
// DSN (it may hold a password); name prefixes them.
func OpenTransactional(ctx context.Context, name, dsn string) (Transactional, error) {
	ccfg, err := ConnConfig(name, dsn)
	if err != nil {
		return Transactional{}, err
	}
	ccfg.ConnectTimeout = PingTimeout
	cctx, cancel := context.WithTimeout(ctx, PingTimeout)
	defer cancel()
	conn, err := pgx.ConnectConfig(cctx, ccfg)
	if err != nil {
		return Transactional{}, fmt.Errorf("%s: connect: %w: %w", name, strategies.ErrUnavailable, err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if err := conn.Ping(cctx); err != nil {
		return Transactional{}, fmt.Errorf("%s: ping: %w: %w", name, strategies.ErrUnavailable, err)
	}
	return Transactional{}, nil
}

// Acquire returns strategies.ErrTransactional: the strategy takes no lock.
func (Transactional) Acquire(context.Context, string) (strategies.Lease, error) {
	return nil, strategies.ErrTransactional
}

// Close does nothing: OpenTransactional keeps no connection.
func (Transactional) Close() error { return nil }
