package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// PostgresMaxConns is the size of a Postgres store's connection pool: 64,
// enough for many concurrent workers. Connections are opened lazily, and a
// pool_max_conns setting in the DSN takes precedence.
const PostgresMaxConns = 64

// PostgresConnectTimeout bounds opening one connection: 2 seconds. A
// connect_timeout setting in the DSN takes precedence.
const PostgresConnectTimeout = 2 * time.Second

// PostgresConnectAttempts is how many times a call tries to get a
// connection when opening one times out: 3. At the start of a run every
// worker calls at once and each makes the pool open a connection; on a
// small machine that burst can outlast the connect timeout. A server that
// is down still fails the call within attempts × the connect timeout.
const PostgresConnectAttempts = 3

// Postgres is the store kept in PostgreSQL, with the same judgement as
// Memory (judgeWrite: the same counts for the same sequence of calls) and
// a fenced write done for real: refused when its token is older than the
// newest the key has seen, and with Setup.Strict when it is no newer than
// the last applied write's. Enter and Finish each run in their own READ
// COMMITTED transaction, so nothing holds across them. Its transactions,
// counters and history are in the package doc (The Postgres store).
type Postgres struct {
	pool *pgxpool.Pool
	// rec is the recorder SetRecorder installed, nil for none.
	rec atomic.Pointer[recorderRef]
	// lanes[l] is held around the Record calls of lane l (Recorder: the
	// calls of one lane never run at once).
	lanes [Lanes]sync.Mutex
}

var (
	_ Store      = (*Postgres)(nil)
	_ Transactor = (*Postgres)(nil)
	_ Offerer    = (*Postgres)(nil)
	_ Historian  = (*Postgres)(nil)
)

// NewPostgres connects to the database at dsn (a pgx connection string) and
// checks that it answers. Call Reset before use; instance processes that
// only call Enter and Finish can share a database that another process
// Reset. Errors never include the DSN's password.
func NewPostgres(ctx context.Context, dsn string) (*Postgres, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		// The parse error may quote the DSN, password included: say less.
		return nil, errors.New("store: postgres: cannot parse the DSN")
	}
	if !strings.Contains(dsn, "pool_max_conns") {
		cfg.MaxConns = PostgresMaxConns
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = PostgresConnectTimeout
	}
	// The judgement relies on READ COMMITTED: each statement sees what
	// committed before it, and nothing aborts for serialisation. Set it
	// in case the server defaults to something stricter.
	cfg.ConnConfig.RuntimeParams["default_transaction_isolation"] = "read committed"
	if _, ok := cfg.ConnConfig.RuntimeParams["application_name"]; !ok {
		cfg.ConnConfig.RuntimeParams["application_name"] = "lockbench-store"
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("store: postgres: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("store: postgres: %w", err)
	}
	return &Postgres{pool: pool}, nil
}

// Reset creates the store's tables and functions if they do not exist,
// empties them and loads s: the accounts, and the payments when s lists
// them (with COPY). A run's payments come later, a batch at a time, from
// Offer.
func (p *Postgres) Reset(ctx context.Context, s Setup) error {
	if err := validateSetup(s); err != nil {
		return err
	}
	err := pgx.BeginFunc(ctx, p.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, postgresSchema); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO lockbench_store_config (mode, fencing, strict) VALUES ($1, $2, $3)`,
			int32(s.Mode), s.Fencing, s.Fencing && s.Strict); err != nil {
			return err
		}
		_, err := tx.CopyFrom(ctx, pgx.Identifier{"lockbench_store_accounts"},
			[]string{"id", "balance"},
			pgx.CopyFromSlice(len(s.Balances), func(i int) ([]any, error) {
				return []any{int32(i), s.Balances[i]}, nil
			}))
		if err != nil {
			return err
		}
		return copyPayments(ctx, tx, 0, s.PaymentAccount)
	})
	if err != nil {
		return fmt.Errorf("store: postgres reset: %w", err)
	}
	// Fresh statistics keep the planner on the primary keys for the
	// functions' lookups after a bulk load. (A payments table that
	// starts empty and fills as the run offers is left unanalysed: the
	// planner then assumes a table of some pages, and the lookups stay
	// on the primary key too.)
	analyze := `ANALYZE lockbench_store_accounts`
	if len(s.PaymentAccount) > 0 {
		analyze += `, lockbench_store_payments`
	}
	if _, err := p.pool.Exec(ctx, analyze); err != nil {
		return fmt.Errorf("store: postgres reset: %w", err)
	}
	return nil
}

// Offer creates the rows of payments first… (Offerer), with one COPY.
func (p *Postgres) Offer(ctx context.Context, first int64, accounts []int32) error {
	if err := copyPayments(ctx, p.pool, first, accounts); err != nil {
		return fmt.Errorf("store: postgres offer: %w", err)
	}
	return nil
}

// copyPayments creates the rows of payments first… of accounts[i].
func copyPayments(ctx context.Context, db interface {
	CopyFrom(context.Context, pgx.Identifier, []string, pgx.CopyFromSource) (int64, error)
}, first int64, accounts []int32) error {
	if len(accounts) == 0 {
		return nil
	}
	_, err := db.CopyFrom(ctx, pgx.Identifier{"lockbench_store_payments"},
		[]string{"id", "account"},
		pgx.CopyFromSlice(len(accounts), func(i int) ([]any, error) {
			return []any{first + int64(i), accounts[i]}, nil
		}))
	return err
}

// Close closes the connection pool. The tables stay for inspection.
func (p *Postgres) Close() error {
	p.pool.Close()
	return nil
}
