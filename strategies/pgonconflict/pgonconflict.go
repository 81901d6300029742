package pgonconflict

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockbench/lockbench/strategies"
	"github.com/lockbench/lockbench/strategies/pgutil"
)

// Defaults: those of the Postgres strategies, kept in pgutil (which says
// why each is what it is). The timeouts are short on purpose: a database
// that does not answer within a couple of seconds is down as far as a
// payment is concerned, and the benchmark must report that rather than hang.
const (
	// DefaultMaxConns is the connection pool size of one strategy object
	// (one instance): pgutil.DefaultMaxConns, 32, so that an instance's
	// workers rarely queue for a connection.
	DefaultMaxConns = pgutil.DefaultMaxConns
	// DefaultWarmConns is how many connections New opens before it returns:
	// pgutil.DefaultWarmConns, 8, so that the first claims do not all wait
	// for new server processes at once.
	DefaultWarmConns = pgutil.DefaultWarmConns
	// DefaultStatementTimeout bounds each statement, including the wait for
	// a pooled connection and any connection attempt:
	// pgutil.DefaultStatementTimeout, 3s, so a stopped server is reported
	// within that.
	DefaultStatementTimeout = pgutil.DefaultStatementTimeout
	// DefaultConnectTimeout bounds one connection attempt:
	// pgutil.DefaultConnectTimeout, 5s, longer than DefaultStatementTimeout
	// on purpose (the pool finishes an attempt in the background when the
	// statement that started it gives up).
	DefaultConnectTimeout = pgutil.DefaultConnectTimeout
)

func init() {
	strategies.Register(strategies.Info{
		Name:         "pg-onconflict",
		Order:        120,
		Color:        "#56b4e9", // sky blue
		Description:  "Postgres claim row via INSERT … ON CONFLICT with a DB-clock lease; fenced by a sequence",
		Need:         strategies.Need{Backend: strategies.BackendPostgres, Nodes: 1},
		Fencing:      true,
		CrossProcess: true,
		// Every statement runs under a timeout derived from the call's
		// context and cancelled before the call returns; pgx and its pool
		// see only that.
		KeepsNoContext: true,
		New:            strategies.FactoryOf(New),
	})
}

// OnConflict locks keys with claim rows in the Postgres database at
// Config.PostgresDSN. It is safe for concurrent use.
type OnConflict struct {
	pool  *pgxpool.Pool
	ttl   time.Duration
	owner string
}

var _ strategies.Strategy = (*OnConflict)(nil)

// New connects to cfg.PostgresDSN with a pool of DefaultMaxConns connections,
// checks within DefaultStatementTimeout that the database answers, creates
// the lock table and token sequence if they do not exist, and opens
// DefaultWarmConns connections. Claims last cfg.TTL (microsecond resolution,
// that of Postgres intervals).
func New(ctx context.Context, cfg strategies.Config) (*OnConflict, error) {
	cfg = cfg.WithDefaults()
	if err := pgutil.CheckDSN("pgonconflict", cfg.PostgresDSN); err != nil {
		return nil, err // before the TTL's error
	}
	ttl := cfg.TTL.Truncate(time.Microsecond)
	if ttl <= 0 {
		return nil, fmt.Errorf("pgonconflict: TTL %v is below the 1µs resolution of an interval", cfg.TTL)
	}
	pcfg, err := pgutil.PoolConfig("pgonconflict", cfg.PostgresDSN)
	if err != nil {
		return nil, err
	}
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return nil, classify(ctx, "connect", err)
	}
	if err := createSchema(ctx, pool); err != nil {
		pool.Close()
		return nil, err
	}
	pgutil.Warm(ctx, pool, DefaultWarmConns)
	owner, err := ownerValue(cfg.Owner)
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("pgonconflict: %w", err)
	}
	return &OnConflict{pool: pool, ttl: ttl, owner: owner}, nil
}

// ownerValue returns prefix/16 random hex digits: unique per strategy
// object, so a claim row names the instance that holds it.
func ownerValue(prefix string) (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return prefix + "/" + hex.EncodeToString(b[:]), nil
}

// Acquire makes one claim attempt. It returns strategies.ErrNotAcquired when
// the key's claim is live, and an error wrapping strategies.ErrUnavailable
// when the database cannot be reached within DefaultStatementTimeout.
func (o *OnConflict) Acquire(ctx context.Context, key string) (strategies.Lease, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// The deadline counts from before the statement is sent: the database's
	// now() cannot be earlier than that (on one clock).
	start := time.Now()
	token, err := o.claim(ctx, key)
	if isUndefinedTable(err) {
		// The table or sequence is gone: dropped, or lost in a crash of a
		// server that does not sync its commits. Create them again, once.
		if err := createSchema(ctx, o.pool); err != nil {
			return nil, err
		}
		start = time.Now()
		token, err = o.claim(ctx, key)
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, strategies.ErrNotAcquired
	}
	if err != nil {
		return nil, classify(ctx, "acquire "+key, err)
	}
	l := &lease{o: o, key: key, token: token}
	l.deadline.Set(start.Add(o.ttl))
	return l, nil
}

// claim runs claimSQL within DefaultStatementTimeout.
func (o *OnConflict) claim(ctx context.Context, key string) (int64, error) {
	sctx, cancel := context.WithTimeout(ctx, DefaultStatementTimeout)
	defer cancel()
	var token int64
	err := o.pool.QueryRow(sctx, claimSQL, key, o.owner, o.ttl).Scan(&token)
	return token, err
}

// Close closes the pool, waiting for statements in flight (each bounded by
// DefaultStatementTimeout). Claims still held expire by their TTL.
func (o *OnConflict) Close() error {
	o.pool.Close()
	return nil
}

// lease is one claim row.
type lease struct {
	o        *OnConflict
	key      string
	token    int64
	deadline strategies.Deadline
}

var (
	_ strategies.Lease    = (*lease)(nil)
	_ strategies.Extender = (*lease)(nil)
)

// Key returns the lock key.
func (l *lease) Key() string { return l.key }

// Token returns the claim's token from lockbench_lock_tokens.
func (l *lease) Token() int64 { return l.token }

// Deadline returns the client's time before the claim, or before the latest
// successful Extend, plus its TTL; the database decides by its own clock.
func (l *lease) Deadline() time.Time { return l.deadline.Time() }

// Release frees the claim if it is still this lease's and has not expired.
// It returns strategies.ErrNotOwner otherwise, and on a second Release.
func (l *lease) Release(ctx context.Context) error {
	sctx, cancel := context.WithTimeout(ctx, DefaultStatementTimeout)
	defer cancel()
	tag, err := l.o.pool.Exec(sctx, releaseSQL, l.key, l.o.owner, l.token)
	if err != nil {
		return classify(ctx, "release "+l.key, err)
	}
	if tag.RowsAffected() == 0 {
		return strategies.ErrNotOwner
	}
	return nil
}

// Extend makes the claim last at least ttl (whole microseconds) from the
// database's now() if it is still this lease's and has not expired, and
// moves Deadline on to the client's time before the statement plus ttl. It
// returns strategies.ErrNotOwner otherwise, and after Release, and an error
// wrapping strategies.ErrUnavailable when the database cannot be reached
// within DefaultStatementTimeout; Deadline is unchanged then.
func (l *lease) Extend(ctx context.Context, ttl time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	us := ttl.Truncate(time.Microsecond)
	if us <= 0 {
		return fmt.Errorf("pgonconflict: extend %s: TTL %v is below the 1µs resolution of an interval", l.key, ttl)
	}
	sctx, cancel := context.WithTimeout(ctx, DefaultStatementTimeout)
	defer cancel()
	start := time.Now() // before sending: see Acquire
	tag, err := l.o.pool.Exec(sctx, extendSQL, l.key, l.o.owner, l.token, us)
	if err != nil {
		return classify(ctx, "extend "+l.key, err)
	}
	if tag.RowsAffected() == 0 {
		return strategies.ErrNotOwner
	}
	l.deadline.Raise(start.Add(us))
	return nil
}
