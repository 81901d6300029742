package pgunique

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lockbench/lockbench/strategies"
	"github.com/lockbench/lockbench/strategies/pgutil"
)

// DefaultConnectTimeout bounds New's check that the database answers: 2
// seconds.
const DefaultConnectTimeout = 2 * time.Second

func init() {
	strategies.Register(strategies.Info{
		Name:          "pg-unique",
		Description:   "no lock: processed-marker INSERT … ON CONFLICT DO NOTHING and a guarded debit in one Postgres transaction",
		Need:          strategies.Need{Backend: strategies.BackendPostgres, Nodes: 1},
		CrossProcess:  true,
		Transactional: true,
		New:           strategies.FactoryOf(New),
	})
}

// Unique is the pg-unique strategy: it takes no lock.
type Unique struct{}

var _ strategies.Strategy = Unique{}

// New checks that the database at cfg.PostgresDSN answers within
// DefaultConnectTimeout. Errors never quote the DSN (it may hold a
// password).
func New(ctx context.Context, cfg strategies.Config) (Unique, error) {
	ccfg, err := pgutil.ConnConfig("pgunique", cfg.PostgresDSN)
	if err != nil {
		return Unique{}, err
	}
	ccfg.ConnectTimeout = DefaultConnectTimeout
	cctx, cancel := context.WithTimeout(ctx, DefaultConnectTimeout)
	defer cancel()
	conn, err := pgx.ConnectConfig(cctx, ccfg)
	if err != nil {
		return Unique{}, fmt.Errorf("pgunique: connect: %w: %w", strategies.ErrUnavailable, err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if err := conn.Ping(cctx); err != nil {
		return Unique{}, fmt.Errorf("pgunique: ping: %w: %w", strategies.ErrUnavailable, err)
	}
	return Unique{}, nil
}

// Acquire returns strategies.ErrTransactional: pg-unique takes no lock.
func (Unique) Acquire(context.Context, string) (strategies.Lease, error) {
	return nil, strategies.ErrTransactional
}

// Close does nothing: New keeps no connection.
func (Unique) Close() error { return nil }
