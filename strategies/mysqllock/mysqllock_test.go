package mysqllock

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/lockbench/lockbench/servers"
	"github.com/lockbench/lockbench/strategies"
)

// dsn is the shared server: the one LOCKBENCH_MYSQL_DSN names, or a
// MariaDB TestMain starts.
var dsn string

func TestMain(m *testing.M) { os.Exit(runTests(m)) }

func runTests(m *testing.M) int {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	ep, cluster, err := servers.Ensure(ctx, servers.Needs{MySQL: true}, servers.EndpointsFromEnv(), servers.Options{})
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "mysqllock: start mariadb:", err)
		return 1
	}
	defer cluster.Stop()
	dsn = ep.MySQLDSN
	return m.Run()
}

// newLocks returns a strategy on the shared server, closed when t ends.
func newLocks(t *testing.T) *Locks {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := New(ctx, strategies.Config{MySQLDSN: dsn, Owner: t.Name()})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// admin returns a plain connection pool for looking at and meddling with
// the server, closed when t ends.
func admin(t *testing.T) *sql.DB {
	t.Helper()
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		t.Fatalf("ParseDSN: %v", err)
	}
	cfg.Logger = nopLogger{}
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		t.Fatalf("NewConnector: %v", err)
	}
	db := sql.OpenDB(conn)
	t.Cleanup(func() { db.Close() })
	return db
}

// testKey returns a lock key no other test uses, even across runs against
// one server.
func testKey(t *testing.T) string {
	return fmt.Sprintf("%s-%d", t.Name(), time.Now().UnixNano())
}

func acquire(t *testing.T, s *Locks, key string) *lease {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	l, err := s.Acquire(ctx, key)
	if err != nil {
		t.Fatalf("Acquire(%q): %v", key, err)
	}
	return l.(*lease)
}

// tryAcquire makes an Acquire that may wait d.
func tryAcquire(s *Locks, key string, d time.Duration) (strategies.Lease, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return s.Acquire(ctx, key)
}

// holder returns the connection id holding key's lock, 0 when nobody
// holds it.
func holder(t *testing.T, db *sql.DB, key string) int64 {
	t.Helper()
	var id sql.NullInt64
	if err := db.QueryRow(`SELECT IS_USED_LOCK(?)`, LockName(key)).Scan(&id); err != nil {
		t.Fatalf("IS_USED_LOCK: %v", err)
	}
	return id.Int64
}

// freed waits up to 10 s for key's lock to be free and returns its holder
// then (0: free).
func freed(t *testing.T, db *sql.DB, key string) int64 {
	t.Helper()
	end := time.Now().Add(10 * time.Second)
	for {
		id := holder(t, db, key)
		if id == 0 || time.Now().After(end) {
			return id
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// connID returns the server's id of the lease's connection.
func connID(t *testing.T, l *lease) int64 {
	t.Helper()
	var id int64
	if err := l.conn.QueryRowContext(context.Background(), `SELECT CONNECTION_ID()`).Scan(&id); err != nil {
		t.Fatalf("CONNECTION_ID: %v", err)
	}
	return id
}

func TestRegistered(t *testing.T) {
	info, ok := strategies.Lookup("mysql-get-lock")
	if !ok {
		t.Fatal(`Lookup("mysql-get-lock"): not registered`)
	}
	if info.Need != (strategies.Need{Backend: strategies.BackendMySQL, Nodes: 1}) || info.Fencing || !info.CrossProcess || !info.SessionBound {
		t.Errorf("Info = %+v; want Need mysql ×1, Fencing false, CrossProcess and SessionBound true", info)
	}
	s, err := strategies.New(context.Background(), "mysql-get-lock", strategies.Config{MySQLDSN: dsn})
	if err != nil {
		t.Fatalf("strategies.New: %v", err)
	}
	defer s.Close()
	if !strategies.Blocks(s) {
		t.Error("Blocks = false; want true: GET_LOCK waits on the server")
	}
}

func TestLockName(t *testing.T) {
	long := strings.Repeat("k", MaxNameLen+1)
	sum := sha256.Sum256([]byte(long))
	for _, tc := range []struct {
		name, key, want string
	}{
		// Short keys are their own names.
		{"short", "account:42", "account:42"},
		// 64 characters (not bytes) still fit.
		{"64 runes", strings.Repeat("é", MaxNameLen), strings.Repeat("é", MaxNameLen)},
		// Longer ones are hashed, to 58 characters.
		{"long", long, "lockbench:" + hex.EncodeToString(sum[:24])},
	} {
		if got := LockName(tc.key); got != tc.want {
			t.Errorf("%s: LockName(%q) = %q; want %q", tc.name, tc.key, got, tc.want)
		}
	}
	if got := len(LockName(long)); got != 58 {
		t.Errorf("len(LockName(long)) = %d; want 58", got)
	}
}

// TestFactoryError checks that the registered factory reports a server
// nobody listens on promptly, with a nil Strategy, and DSN errors without
// quoting the DSN.
func TestFactoryError(t *testing.T) {
	start := time.Now()
	s, err := strategies.New(context.Background(), "mysql-get-lock", strategies.Config{MySQLDSN: "u:pw@tcp(127.0.0.1:1)/db"})
	took := time.Since(start)
	if !errors.Is(err, strategies.ErrUnavailable) {
		t.Errorf("New with nobody listening: got %v; want ErrUnavailable", err)
	}
	if s != nil {
		t.Errorf("New with nobody listening: got Strategy %#v; want nil", s)
	}
	if took > DefaultStatementTimeout+time.Second {
		t.Errorf("New with nobody listening took %v; want at most about %v", took, DefaultStatementTimeout)
	}
	if _, err := New(context.Background(), strategies.Config{}); !errors.Is(err, errNoDSN) {
		t.Errorf("New without a DSN: got %v; want errNoDSN", err)
	}
	_, err = New(context.Background(), strategies.Config{MySQLDSN: "u:s3cret@tcp(h:1)db"})
	if !errors.Is(err, errInvalidDSN) || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("New with a bad DSN: got %v; want errInvalidDSN, without the password", err)
	}
	// A wrong password is the server's answer, not unavailability.
	cfg, _ := mysql.ParseDSN(dsn)
	cfg.Passwd = "wrong"
	_, err = New(context.Background(), strategies.Config{MySQLDSN: cfg.FormatDSN()})
	var me *mysql.MySQLError
	if !errors.As(err, &me) || errors.Is(err, strategies.ErrUnavailable) {
		t.Errorf("New with a wrong password: got %v; want the server's error, not ErrUnavailable", err)
	}
}

func TestAcquireRelease(t *testing.T) {
	a, b := newLocks(t), newLocks(t)
	adm := admin(t)
	ctx := context.Background()
	key := testKey(t)
	l := acquire(t, a, key)
	if got := l.Key(); got != key {
		t.Errorf("Key() = %q; want %q", got, key)
	}
	if got := l.Token(); got != 0 {
		t.Errorf("Token() = %d; want 0", got)
	}
	if got := l.Deadline(); !got.IsZero() {
		t.Errorf("Deadline() = %v; want the zero time", got)
	}
	if l.Waited() {
		t.Error("Waited() = true for a free lock; want false")
	}
	if got, want := holder(t, adm, key), connID(t, l); got != want {
		t.Errorf("IS_USED_LOCK: held by connection %d; want the lease's, %d", got, want)
	}
	// Held: both another instance and the same one (another of its
	// connections, another session) wait and time out.
	for name, o := range map[string]*Locks{"other instance": b, "same instance": a} {
		start := time.Now()
		_, err := tryAcquire(o, key, 200*time.Millisecond)
		took := time.Since(start)
		if !errors.Is(err, strategies.ErrNotAcquired) {
			t.Errorf("%s: Acquire of a held key: got %v; want ErrNotAcquired", name, err)
		}
		// Rounded to GET_LOCK's whole seconds it would wait 1 s.
		if took < 150*time.Millisecond || took >= time.Second {
			t.Errorf("%s: Acquire with 200ms to wait returned after %v; want about 200ms, under the 1 s a whole-second timeout waits (GET_LOCK's fractional timeout)", name, took)
		}
	}
	if err := l.Release(ctx); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if got := holder(t, adm, key); got != 0 {
		t.Errorf("IS_USED_LOCK after Release: held by connection %d; want free", got)
	}
	if err := l.Release(ctx); !errors.Is(err, strategies.ErrNotOwner) {
		t.Errorf("second Release: got %v; want ErrNotOwner", err)
	}
	l2 := acquire(t, b, key)
	// The first holder's second-hand Release must not free b's lock.
	if err := l.Release(ctx); !errors.Is(err, strategies.ErrNotOwner) {
		t.Errorf("old holder's Release: got %v; want ErrNotOwner", err)
	}
	if _, err := tryAcquire(a, key, 50*time.Millisecond); !errors.Is(err, strategies.ErrNotAcquired) {
		t.Errorf("Acquire after the old holder's Release: got %v; want ErrNotAcquired", err)
	}
	if err := l2.Release(ctx); err != nil {
		t.Errorf("Release: %v", err)
	}
	if st := a.db.Stats(); st.InUse != 0 {
		t.Errorf("connections still in use after every Release: %d; want 0", st.InUse)
	}
}

// TestWaits checks that a contender waits on the server and gets the lock
// as soon as the holder releases it, saying it waited.
func TestWaits(t *testing.T) {
	a, b := newLocks(t), newLocks(t)
	key := testKey(t)
	l := acquire(t, a, key)
	const hold = 300 * time.Millisecond
	time.AfterFunc(hold, func() { _ = l.Release(context.Background()) })
	start := time.Now()
	got, err := tryAcquire(b, key, 5*time.Second)
	took := time.Since(start)
	if err != nil {
		t.Fatalf("Acquire while held for %v: %v; want the lock once released", hold, err)
	}
	defer got.Release(context.Background())
	if took < hold-50*time.Millisecond || took > hold+time.Second {
		t.Errorf("Acquire took %v; want about the hold, %v", took, hold)
	}
	if !strategies.Waited(got) {
		t.Error("Waited() = false after waiting for the holder; want true")
	}
}

// TestNoDeadline checks that an Acquire without a deadline waits in slices
// until the lock is free, longer than one slice.
func TestNoDeadline(t *testing.T) {
	a, b := newLocks(t), newLocks(t)
	key := testKey(t)
	l := acquire(t, a, key)
	hold := DefaultWaitSlice + 300*time.Millisecond
	time.AfterFunc(hold, func() { _ = l.Release(context.Background()) })
	start := time.Now()
	got, err := b.Acquire(context.Background(), key)
	if err != nil {
		t.Fatalf("Acquire without a deadline: %v; want the lock once released", err)
	}
	defer got.Release(context.Background())
	if took := time.Since(start); took < hold-50*time.Millisecond {
		t.Errorf("Acquire took %v; want at least the hold, %v", took, hold)
	}
}

// TestLostSession checks what happens when the server drops the lock
// while its holder carries on: another contender gets the lock, the
// holder's Release reports ErrNotOwner promptly, and the holder's
// connection is closed rather than returned to the pool.
func TestLostSession(t *testing.T) {
	for _, tc := range []struct {
		name string
		lose func(t *testing.T, adm *sql.DB, l *lease)
	}{
		// The connection is killed, as by a server restart, a failover or
		// a reset: the session is gone.
		{"connection-killed", func(t *testing.T, adm *sql.DB, l *lease) {
			if _, err := adm.Exec(fmt.Sprintf(`KILL CONNECTION %d`, connID(t, l))); err != nil {
				t.Fatalf("KILL: %v", err)
			}
		}},
		// The session lives but its lock is gone, as RELEASE_ALL_LOCKS or
		// a pooler's reset would do: the release finds no lock.
		{"lock-dropped", func(t *testing.T, _ *sql.DB, l *lease) {
			if _, err := l.conn.ExecContext(context.Background(), `SELECT RELEASE_LOCK(?)`, l.name); err != nil {
				t.Fatalf("RELEASE_LOCK: %v", err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := newLocks(t), newLocks(t)
			adm := admin(t)
			ctx := context.Background()
			key := testKey(t)
			l := acquire(t, a, key)
			id := connID(t, l)
			open := a.db.Stats().OpenConnections
			tc.lose(t, adm, l)

			// The server let go: another contender takes the lock.
			other, err := tryAcquire(b, key, 5*time.Second)
			if err != nil {
				t.Fatalf("other contender: %v; want the lock the holder's session lost", err)
			}
			defer other.Release(ctx)

			start := time.Now()
			err = l.Release(ctx)
			if took := time.Since(start); took > DefaultStatementTimeout {
				t.Errorf("Release took %v; want an answer within %v", took, DefaultStatementTimeout)
			}
			if !errors.Is(err, strategies.ErrNotOwner) {
				t.Errorf("Release after the session lost the lock: got %v; want ErrNotOwner", err)
			}
			t.Logf("Release: %v", err)
			if st := a.db.Stats(); st.OpenConnections != open-1 || st.InUse != 0 {
				t.Errorf("pool after Release: %d connections (%d in use); want %d, none in use: the holder's connection closed",
					st.OpenConnections, st.InUse, open-1)
			}
			// The strategy still works, and not on the holder's session.
			l2 := acquire(t, a, key+"-after")
			if got := connID(t, l2); got == id {
				t.Errorf("the holder's connection (%d) is back in the pool", id)
			}
			if err := l2.Release(ctx); err != nil {
				t.Errorf("Release of a fresh lease: %v", err)
			}
		})
	}
}

// TestReentrantNotPooled checks that a session granted the lock twice
// (GET_LOCK is re-entrant: n grants need n releases) is not returned to
// the pool still holding it: Release ends it, and the lock is free.
func TestReentrantNotPooled(t *testing.T) {
	a, b := newLocks(t), newLocks(t)
	adm := admin(t)
	key := testKey(t)
	l := acquire(t, a, key)
	var again int64
	if err := l.conn.QueryRowContext(context.Background(), `SELECT GET_LOCK(?, 0)`, l.name).Scan(&again); err != nil || again != 1 {
		t.Fatalf("second GET_LOCK on the holder's session: %d, %v; want 1", again, err)
	}
	open := a.db.Stats().OpenConnections
	if err := l.Release(context.Background()); err != nil {
		t.Errorf("Release: %v; want nil (the lease owned the lock)", err)
	}
	// The server frees a closed session's locks as it notices the
	// close: soon, not at once.
	if got := freed(t, adm, key); got != 0 {
		t.Errorf("IS_USED_LOCK 10 s after Release: held by connection %d; want free", got)
	}
	if got := a.db.Stats().OpenConnections; got != open-1 {
		t.Errorf("pool after Release: %d connections; want %d, the twice-granted session closed", got, open-1)
	}
	got, err := tryAcquire(b, key, time.Second)
	if err != nil {
		t.Fatalf("Acquire after Release: %v", err)
	}
	_ = got.Release(context.Background())
}

// TestCloseEndsSessions checks that Close ends the held sessions too: the
// lock is free at once (as when a process dies), and the lease's Release
// reports ErrNotOwner.
func TestCloseEndsSessions(t *testing.T) {
	a, b := newLocks(t), newLocks(t)
	ctx := context.Background()
	key := testKey(t)
	l := acquire(t, a, key)
	done := make(chan error, 1)
	go func() { done <- a.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Close: %v", err)
		}
	case <-time.After(DefaultStatementTimeout):
		t.Fatalf("Close with a lease held: still running after %v", DefaultStatementTimeout)
	}
	got, err := tryAcquire(b, key, 5*time.Second)
	if err != nil {
		t.Fatalf("Acquire after the holder's Close: %v; want the lock within 5s", err)
	}
	_ = got.Release(ctx)
	if err := l.Release(ctx); !errors.Is(err, strategies.ErrNotOwner) {
		t.Errorf("Release after Close: got %v; want ErrNotOwner", err)
	}
	if _, err := a.Acquire(ctx, key); !errors.Is(err, errClosed) {
		t.Errorf("Acquire after Close: got %v; want errClosed", err)
	}
}

func TestCancelledContext(t *testing.T) {
	a := newLocks(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	start := time.Now()
	if _, err := a.Acquire(ctx, testKey(t)); !errors.Is(err, context.Canceled) {
		t.Errorf("Acquire with a cancelled context: got %v; want context.Canceled", err)
	}
	if took := time.Since(start); took > 100*time.Millisecond {
		t.Errorf("Acquire with a cancelled context took %v", took)
	}
}

// TestCancelWhileWaiting checks that a cancel ends a wait in GET_LOCK at
// once, with the context's error, and that the lock's next holder is not
// kept out for long by the server's thread that waited for it.
func TestCancelWhileWaiting(t *testing.T) {
	a, b, c := newLocks(t), newLocks(t), newLocks(t)
	key := testKey(t)
	l := acquire(t, a, key)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	start := time.Now()
	_, err := b.Acquire(ctx, key)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Acquire cancelled while waiting: got %v; want context.Canceled", err)
	}
	if took := time.Since(start); took > 500*time.Millisecond {
		t.Errorf("Acquire cancelled after 100ms returned after %v", took)
	}
	if err := l.Release(context.Background()); err != nil {
		t.Fatalf("Release: %v", err)
	}
	got, err := tryAcquire(c, key, 2*time.Second)
	if err != nil {
		t.Fatalf("Acquire after the release: %v", err)
	}
	_ = got.Release(context.Background())
}

// A server that answers after the acquire's deadline (stopped here, as a
// busy machine can delay it past DefaultDeadlineMargin) makes a wait that
// timed out: ErrNotAcquired, not the deadline's error. The session that
// waited is closed, so nothing it might have been granted stays held.
func TestAcquireDeadlineBeatsServer(t *testing.T) {
	if os.Getenv("LOCKBENCH_MYSQL_DSN") != "" {
		t.Skip("stops the server: only one this test started")
	}
	a, b := newLocks(t), newLocks(t)
	var pidFile string
	if err := admin(t).QueryRow(`SELECT @@pid_file`).Scan(&pidFile); err != nil {
		t.Fatalf("@@pid_file: %v", err)
	}
	raw, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatalf("the server's pid file: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil || pid <= 1 {
		t.Fatalf("the server's pid file %s holds %q", pidFile, raw)
	}
	key := testKey(t)
	l := acquire(t, a, key)
	resumed := make(chan struct{})
	t.Cleanup(func() { <-resumed })
	go func() {
		defer close(resumed)
		time.Sleep(100 * time.Millisecond) // the wait is under way
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			t.Errorf("SIGSTOP the server: %v", err)
			return
		}
		time.Sleep(600 * time.Millisecond) // past the acquire's 300 ms
		if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
			t.Errorf("SIGCONT the server: %v", err)
		}
	}()
	start := time.Now()
	_, err = tryAcquire(b, key, 300*time.Millisecond)
	if !errors.Is(err, strategies.ErrNotAcquired) {
		t.Errorf("Acquire whose deadline passed while the server was stopped: got %v after %v; want ErrNotAcquired", err, time.Since(start))
	}
	<-resumed
	if err := l.Release(context.Background()); err != nil {
		t.Errorf("the holder's Release after the server resumed: %v", err)
	}
}
