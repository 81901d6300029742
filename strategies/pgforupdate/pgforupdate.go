package pgforupdate

import (
	"context"

	"github.com/lockbench/lockbench/strategies"
	"github.com/lockbench/lockbench/strategies/pgutil"
)

func init() {
	strategies.Register(strategies.Info{
		Name:          "pg-for-update",
		Order:         160,
		Color:         "#663333", // dark red (Tol dark): no lock server, the account row's lock
		Description:   "no lock server: SELECT … FOR UPDATE on the account row, a plain processed mark and the debit in one Postgres transaction",
		Need:          strategies.Need{Backend: strategies.BackendPostgres, Nodes: 1},
		CrossProcess:  true,
		Transactional: true,
		Transaction:   strategies.TxRowLock,
		New:           strategies.FactoryOf(New),
	})
}

// New checks that the database at cfg.PostgresDSN answers within
// pgutil.PingTimeout.
func New(ctx context.Context, cfg strategies.Config) (pgutil.Transactional, error) {
	return pgutil.OpenTransactional(ctx, "pgforupdate", cfg.PostgresDSN)
}
