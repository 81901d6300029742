package pgunique

import (
	"context"

	"github.com/lockbench/lockbench/strategies"
	"github.com/lockbench/lockbench/strategies/pgutil"
)

func init() {
	strategies.Register(strategies.Info{
		Name:          "pg-unique",
		Order:         150,
		Color:         "#ddcc77", // sand (Tol): no lock, the database's constraint
		Description:   "no lock: processed-marker INSERT … ON CONFLICT DO NOTHING and a guarded debit in one Postgres transaction",
		Need:          strategies.Need{Backend: strategies.BackendPostgres, Nodes: 1},
		CrossProcess:  true,
		Transactional: true,
		Transaction:   strategies.TxUniqueMarker,
		New:           strategies.FactoryOf(New),
	})
}

// New checks that the database at cfg.PostgresDSN answers within
// pgutil.PingTimeout.
func New(ctx context.Context, cfg strategies.Config) (pgutil.Transactional, error) {
	return pgutil.OpenTransactional(ctx, "pgunique", cfg.PostgresDSN)
}
