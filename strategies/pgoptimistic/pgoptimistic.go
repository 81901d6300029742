package pgoptimistic

import (
	"context"

	"github.com/lockbench/lockbench/strategies"
	"github.com/lockbench/lockbench/strategies/pgutil"
)

func init() {
	strategies.Register(strategies.Info{
		Name:          "pg-optimistic",
		Order:         170,
		Color:         "#44aa99", // teal (Tol): no lock, a version check
		Description:   "no lock: the account row's update checks the version read, retried on conflict, with a plain processed mark, in one Postgres transaction",
		Need:          strategies.Need{Backend: strategies.BackendPostgres, Nodes: 1},
		CrossProcess:  true,
		Transactional: true,
		Transaction:   strategies.TxOptimistic,
		New:           strategies.FactoryOf(New),
	})
}

// New checks that the database at cfg.PostgresDSN answers within
// pgutil.PingTimeout.
func New(ctx context.Context, cfg strategies.Config) (pgutil.Transactional, error) {
	return pgutil.OpenTransactional(ctx, "pgoptimistic", cfg.PostgresDSN)
}
