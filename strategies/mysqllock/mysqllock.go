package mysqllock

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"database/sql/driver"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/go-sql-driver/mysql"

	"github.com/lockbench/lockbench/strategies"
)

// Defaults. As for the Postgres strategies: a server that does not answer
// within a couple of seconds is down as far as a payment is concerned, and
// the benchmark must report that rather than hang.
const (
	// DefaultMaxConns is the connection pool size of one strategy object
	// (one instance): 32. A held lease keeps one connection, and so does an
	// Acquire waiting in GET_LOCK, so this is also how many locks one
	// instance can hold or wait for at once.
	DefaultMaxConns = 32
	// DefaultWarmConns is how many connections New opens before it
	// returns: 8, lockbench's default workers per instance.
	DefaultWarmConns = 8
	// DefaultStatementTimeout bounds each statement but GET_LOCK's wait,
	// including the wait for a pooled connection and any connection
	// attempt: 3s.
	DefaultStatementTimeout = 3 * time.Second
	// DefaultConnectTimeout is the driver's dial timeout when the DSN sets
	// none: 5s.
	DefaultConnectTimeout = 5 * time.Second
	// DefaultDeadlineMargin is taken off the time left before the
	// context's deadline to make GET_LOCK's timeout: 20ms, so that the
	// server says "timed out" before the deadline closes the connection
	// (which would cost a new connection for every acquire that times out).
	DefaultDeadlineMargin = 20 * time.Millisecond
	// DefaultWaitSlice is how long one GET_LOCK waits when the context has
	// no deadline: 1s, then it asks again until the context is done. It
	// bounds how long the server's thread waits on for a client that gave
	// up.
	DefaultWaitSlice = time.Second
	// MaxNameLen is the longest lock name used as it is: 64 characters,
	// MySQL's limit (MariaDB has none).
	MaxNameLen = 64
)

// The statements. GET_LOCK returns 1 when granted, 0 on a timeout, NULL on
// an error (the thread killed); RELEASE_LOCK returns 1 when it gave up one
// grant, 0 when another session holds the lock, NULL when nobody does.
// unlockSQL also says whether the session still holds the lock after
// that one grant (IS_USED_LOCK names the holding connection): a session
// granted the lock twice, which Acquire never lets happen, would.
const (
	lockSQL   = `SELECT GET_LOCK(?, ?)`
	unlockSQL = `SELECT RELEASE_LOCK(?), IS_USED_LOCK(?) <=> CONNECTION_ID()`
)

func init() {
	strategies.Register(strategies.Info{
		Name:         "mysql-get-lock",
		Order:        140,
		Color:        "#997700", // ochre (Tol medium-contrast dark yellow)
		Description:  "MariaDB/MySQL GET_LOCK on a connection held for the lease, waiting on the server up to the acquire timeout; no TTL, no token",
		Need:         strategies.Need{Backend: strategies.BackendMySQL, Nodes: 1},
		CrossProcess: true,
		SessionBound: true,
		New:          strategies.FactoryOf(New),
	})
}

// LockName is the name key's lock has on the server: the key itself when
// it has at most MaxNameLen characters, else "lockbench:" and the first
// 24 bytes of its SHA-256 in hex (58 characters). It is the same in every
// process.
func LockName(key string) string {
	if utf8.RuneCountInString(key) <= MaxNameLen {
		return key
	}
	sum := sha256.Sum256([]byte(key))
	return "lockbench:" + hex.EncodeToString(sum[:24])
}

// Locks locks keys with GET_LOCK on the server at Config.MySQLDSN. It is
// safe for concurrent use.
type Locks struct {
	db *sql.DB

	mu     sync.Mutex
	held   map[*lease]struct{} // leases holding a connection
	closed bool
}

var (
	_ strategies.Strategy = (*Locks)(nil)
	_ strategies.Blocker  = (*Locks)(nil)
)

// New connects to cfg.MySQLDSN with a pool of DefaultMaxConns connections,
// checks within DefaultStatementTimeout that the server answers, and opens
// DefaultWarmConns connections. cfg.TTL is not used: the lock lives as
// long as its session. Its errors never quote the DSN.
func New(ctx context.Context, cfg strategies.Config) (*Locks, error) {
	if cfg.MySQLDSN == "" {
		return nil, errNoDSN
	}
	mcfg, err := mysql.ParseDSN(cfg.MySQLDSN)
	if err != nil {
		return nil, errInvalidDSN
	}
	if mcfg.Timeout == 0 {
		mcfg.Timeout = DefaultConnectTimeout
	}
	mcfg.InterpolateParams = true
	mcfg.Logger = nopLogger{}
	conn, err := mysql.NewConnector(mcfg)
	if err != nil {
		return nil, errInvalidDSN
	}
	db := sql.OpenDB(conn)
	db.SetMaxOpenConns(DefaultMaxConns)
	db.SetMaxIdleConns(DefaultMaxConns) // database/sql keeps 2 by default
	pctx, cancel := context.WithTimeout(ctx, DefaultStatementTimeout)
	err = db.PingContext(pctx)
	cancel()
	if err != nil {
		db.Close()
		return nil, classify(ctx, "connect", err)
	}
	warm(ctx, db, DefaultWarmConns)
	return &Locks{db: db, held: map[*lease]struct{}{}}, nil
}

// warm opens up to n connections, one after another, within
// DefaultStatementTimeout in all, and returns them to the pool. Failures
// are left for the first statements to meet.
func warm(ctx context.Context, db *sql.DB, n int) {
	wctx, cancel := context.WithTimeout(ctx, DefaultStatementTimeout)
	defer cancel()
	var conns []*sql.Conn
	for range n {
		c, err := db.Conn(wctx)
		if err != nil {
			break
		}
		conns = append(conns, c)
	}
	for _, c := range conns {
		c.Close()
	}
}

// Blocks reports true: Acquire waits on the server, up to the context's
// deadline.
func (s *Locks) Blocks() bool { return true }

// Acquire takes key's lock, waiting on the server while another session
// holds it, until ctx's deadline (less DefaultDeadlineMargin). It returns
// strategies.ErrNotAcquired when the wait timed out, ctx's error when ctx
// was cancelled, and an error wrapping strategies.ErrUnavailable when the
// server cannot be reached within DefaultStatementTimeout. A connection that
// dies under GET_LOCK is closed and the attempt retried on another, up to
// DefaultMaxConns times while ctx allows: a lock the dead session may have
// been granted died with it.
func (s *Locks) Acquire(ctx context.Context, key string) (strategies.Lease, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return nil, errClosed
	}
	name := LockName(key)
	for attempt := 0; ; attempt++ {
		cctx, cancel := context.WithTimeout(ctx, DefaultStatementTimeout)
		c, err := s.db.Conn(cctx)
		cancel()
		if err != nil {
			return nil, classify(ctx, "acquire "+key, err)
		}
		got, waited, err := getLock(ctx, c, name)
		if err != nil {
			// The server may have granted the lock before the error (a
			// reply lost to a deadline or a reset): only ending the
			// session is sure to give it up.
			destroy(c)
			if !fromServer(err) && ctx.Err() == nil && attempt < DefaultMaxConns && !errors.Is(err, context.DeadlineExceeded) {
				continue
			}
			if waited && errors.Is(ctx.Err(), context.DeadlineExceeded) {
				// The deadline beat the server's own timeout (a busy
				// machine): the wait timed out, and the session that
				// might have been granted the lock is gone.
				return nil, strategies.ErrNotAcquired
			}
			return nil, classify(ctx, "acquire "+key, err)
		}
		if !got {
			c.Close() // the session holds nothing: back to the pool
			if err := ctx.Err(); err != nil && !errors.Is(err, context.DeadlineExceeded) {
				return nil, err
			}
			return nil, strategies.ErrNotAcquired
		}
		l := &lease{s: s, key: key, name: name, conn: c, waited: waited}
		if !s.track(l) {
			destroy(c)
			return nil, errClosed
		}
		return l, nil
	}
}

// getLock runs GET_LOCK on c: once without waiting, then, if the lock is
// held, waiting as long as ctx allows (see Acquire). waited reports that
// the first try found the lock held.
func getLock(ctx context.Context, c *sql.Conn, name string) (got, waited bool, err error) {
	if got, err = lockOnce(ctx, c, name, 0); got || err != nil {
		return got, false, err
	}
	for {
		wait := DefaultWaitSlice
		if dl, ok := ctx.Deadline(); ok {
			wait = time.Until(dl) - DefaultDeadlineMargin
			if wait <= 0 {
				return false, true, nil
			}
		}
		if got, err = lockOnce(ctx, c, name, wait); got || err != nil {
			return got, true, err
		}
		if _, ok := ctx.Deadline(); ok || ctx.Err() != nil {
			return false, true, nil
		}
	}
}

// lockOnce runs GET_LOCK(name, wait) on c, the statement bounded by ctx and
// by wait + DefaultStatementTimeout, and reports whether it was granted.
func lockOnce(ctx context.Context, c *sql.Conn, name string, wait time.Duration) (bool, error) {
	sctx, cancel := context.WithTimeout(ctx, wait+DefaultStatementTimeout)
	defer cancel()
	// Seconds, with the server's microseconds.
	secs := math.Round(wait.Seconds()*1e6) / 1e6
	var r sql.NullInt64
	if err := c.QueryRowContext(sctx, lockSQL, name, secs).Scan(&r); err != nil {
		return false, err
	}
	if !r.Valid {
		return false, fmt.Errorf("mysqllock: GET_LOCK(%q) returned NULL (the server's thread was killed, or out of memory)", name)
	}
	return r.Int64 == 1, nil
}

// track records l as holding a connection; false when the strategy is
// closed (Close would not see l).
func (s *Locks) track(l *lease) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.held[l] = struct{}{}
	return true
}

func (s *Locks) untrack(l *lease) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.held, l)
}

// Close ends every session of the strategy, the ones leases hold too: their
// locks are freed at once, as a crashed process's are when the kernel
// closes its sockets. It then closes the pool, and returns nil. A lease's
// Release after Close returns strategies.ErrNotOwner.
func (s *Locks) Close() error {
	s.mu.Lock()
	s.closed = true
	held := s.held
	s.held = map[*lease]struct{}{}
	s.mu.Unlock()
	for l := range held {
		if c := l.take(); c != nil {
			destroy(c)
		}
	}
	// database/sql reports the first connection that failed to close:
	// one the server or a proxy had already dropped, whose goodbye
	// (COM_QUIT) could not be sent. Its session is over either way.
	_ = s.db.Close()
	return nil
}

// destroy closes c's connection for good instead of returning it to the
// pool: it is dead, or its session may hold a lock nobody tracks any more.
// database/sql discards a connection whose Raw function returns
// driver.ErrBadConn, and closing it ends the session on the server.
func destroy(c *sql.Conn) {
	_ = c.Raw(func(any) error { return driver.ErrBadConn })
	_ = c.Close()
}

// nopLogger silences the driver, which logs every failed read to stderr;
// the errors reach the caller anyway.
type nopLogger struct{}

func (nopLogger) Print(...any) {}
