package pgadvisory

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lockbench/lockbench/servers"
	"github.com/lockbench/lockbench/strategies"
)

// dsn is the shared database: the one LOCKBENCH_PG_DSN names, or one
// TestMain starts.
var dsn string

func TestMain(m *testing.M) { os.Exit(runTests(m)) }

func runTests(m *testing.M) int {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	ep, cluster, err := servers.Ensure(ctx, servers.Needs{Postgres: true}, servers.EndpointsFromEnv(), servers.Options{})
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "pgadvisory: start postgres:", err)
		return 1
	}
	defer cluster.Stop()
	dsn = ep.PostgresDSN
	return m.Run()
}

// newPG returns a strategy on the shared database, closed when t ends.
func newPG(t *testing.T) *Advisory {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	a, err := New(ctx, strategies.Config{PostgresDSN: dsn, Owner: t.Name()})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { _ = a.Close() })
	return a
}

// admin returns a plain connection for looking at and meddling with the
// server, closed when t ends.
func admin(t *testing.T) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	return c
}

// testKey returns a lock key no other test uses, even across runs against
// one database.
func testKey(t *testing.T) string {
	return fmt.Sprintf("%s-%d", t.Name(), time.Now().UnixNano())
}

func acquire(t *testing.T, a *Advisory, key string) *lease {
	t.Helper()
	l, err := a.Acquire(context.Background(), key)
	if err != nil {
		t.Fatalf("Acquire(%q): %v", key, err)
	}
	return l.(*lease)
}

// holder returns the backend pid holding key's advisory lock, 0 when
// nobody holds it. A bigint advisory lock shows in pg_locks as its high and
// low 32 bits (classid, objid) with objsubid 1.
func holder(t *testing.T, c *pgx.Conn, key string) uint32 {
	t.Helper()
	id := uint64(LockID(key))
	var pid uint32
	err := c.QueryRow(context.Background(), `SELECT pid FROM pg_locks
		WHERE locktype = 'advisory' AND objsubid = 1 AND granted
		  AND classid = $1::bigint::oid AND objid = $2::bigint::oid`,
		int64(id>>32), int64(id&0xffffffff)).Scan(&pid)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0
	}
	if err != nil {
		t.Fatalf("pg_locks: %v", err)
	}
	return pid
}

func TestRegistered(t *testing.T) {
	info, ok := strategies.Lookup("pg-advisory")
	if !ok {
		t.Fatal(`Lookup("pg-advisory"): not registered`)
	}
	if info.Need != (strategies.Need{Backend: strategies.BackendPostgres, Nodes: 1}) || info.Fencing || !info.CrossProcess {
		t.Errorf("Info = %+v; want Need postgres ×1, Fencing false, CrossProcess true", info)
	}
	s, err := strategies.New(context.Background(), "pg-advisory", strategies.Config{PostgresDSN: dsn})
	if err != nil {
		t.Fatalf("strategies.New: %v", err)
	}
	defer s.Close()
	if strategies.Blocks(s) {
		t.Error("Blocks = true; want false")
	}
}

func TestLockID(t *testing.T) {
	for _, tc := range []struct {
		key  string
		want uint64
	}{
		{"", 0xcbf29ce484222325},  // the FNV-64 offset basis
		{"a", 0xaf63dc4c8601ec8c}, // the FNV-1a reference value
	} {
		if got := uint64(LockID(tc.key)); got != tc.want {
			t.Errorf("LockID(%q) = %#x; want %#x", tc.key, got, tc.want)
		}
	}
}

// TestFactoryError checks that the registered factory reports a database
// nobody listens on promptly, with a nil Strategy.
func TestFactoryError(t *testing.T) {
	start := time.Now()
	s, err := strategies.New(context.Background(), "pg-advisory", strategies.Config{PostgresDSN: "postgres://u@127.0.0.1:1/db"})
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
	if _, err := New(context.Background(), strategies.Config{}); err == nil {
		t.Error("New without a DSN: got nil error")
	}
}

func TestAcquireRelease(t *testing.T) {
	a, b := newPG(t), newPG(t)
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
	if got, want := holder(t, adm, key), l.conn.Conn().PgConn().PID(); got != want {
		t.Errorf("pg_locks: lock held by backend %d; want the lease's connection's, %d", got, want)
	}
	// Held: both another instance and the same one (another of its
	// connections, another session) are refused.
	for name, o := range map[string]*Advisory{"other instance": b, "same instance": a} {
		if _, err := o.Acquire(ctx, key); !errors.Is(err, strategies.ErrNotAcquired) {
			t.Errorf("%s: Acquire of a held key: got %v; want ErrNotAcquired", name, err)
		}
	}
	if err := l.Release(ctx); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if got := holder(t, adm, key); got != 0 {
		t.Errorf("pg_locks after Release: held by backend %d; want free", got)
	}
	if err := l.Release(ctx); !errors.Is(err, strategies.ErrNotOwner) {
		t.Errorf("second Release: got %v; want ErrNotOwner", err)
	}
	l2 := acquire(t, b, key)
	// The first holder's second-hand Release must not free b's lock.
	if err := l.Release(ctx); !errors.Is(err, strategies.ErrNotOwner) {
		t.Errorf("old holder's Release: got %v; want ErrNotOwner", err)
	}
	if _, err := a.Acquire(ctx, key); !errors.Is(err, strategies.ErrNotAcquired) {
		t.Errorf("Acquire after the old holder's Release: got %v; want ErrNotAcquired", err)
	}
	if err := l2.Release(ctx); err != nil {
		t.Errorf("Release: %v", err)
	}
	if got := a.pool.Stat().AcquiredConns(); got != 0 {
		t.Errorf("connections still acquired after every Release: %d; want 0", got)
	}
}

// TestLostSession checks what happens when the server drops the lock
// while its holder carries on: another contender gets the lock, the
// holder's Release reports ErrNotOwner promptly, and the holder's
// connection is destroyed rather than returned to the pool.
func TestLostSession(t *testing.T) {
	for _, tc := range []struct {
		name string
		lose func(t *testing.T, adm *pgx.Conn, l *lease)
	}{
		// The backend is terminated, as by a server restart or failover:
		// the connection is dead.
		{"backend-terminated", func(t *testing.T, adm *pgx.Conn, l *lease) {
			var ok bool
			if err := adm.QueryRow(context.Background(), `SELECT pg_terminate_backend($1)`, l.conn.Conn().PgConn().PID()).Scan(&ok); err != nil || !ok {
				t.Fatalf("pg_terminate_backend: %v, %v", ok, err)
			}
		}},
		// The session lives but its locks are dropped, as a pooler's
		// DISCARD ALL does between clients: the unlock finds no lock.
		{"locks-dropped", func(t *testing.T, _ *pgx.Conn, l *lease) {
			if _, err := l.conn.Exec(context.Background(), `SELECT pg_advisory_unlock_all()`); err != nil {
				t.Fatalf("pg_advisory_unlock_all: %v", err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := newPG(t), newPG(t)
			adm := admin(t)
			ctx := context.Background()
			key := testKey(t)
			l := acquire(t, a, key)
			pid := l.conn.Conn().PgConn().PID()
			total := a.pool.Stat().TotalConns()
			tc.lose(t, adm, l)

			// The server let go: another contender takes the lock.
			deadline := time.Now().Add(5 * time.Second)
			var other strategies.Lease
			for other == nil {
				l2, err := b.Acquire(ctx, key)
				switch {
				case err == nil:
					other = l2
				case !errors.Is(err, strategies.ErrNotAcquired):
					t.Fatalf("other contender: %v", err)
				case time.Now().After(deadline):
					t.Fatal("other contender: lock still held 5s after the holder's session lost it")
				default:
					time.Sleep(10 * time.Millisecond)
				}
			}
			defer other.Release(ctx)

			start := time.Now()
			err := l.Release(ctx)
			if took := time.Since(start); took > DefaultStatementTimeout {
				t.Errorf("Release took %v; want an answer within %v", took, DefaultStatementTimeout)
			}
			if !errors.Is(err, strategies.ErrNotOwner) {
				t.Errorf("Release after the session lost the lock: got %v; want ErrNotOwner", err)
			}
			t.Logf("Release: %v", err)
			st := a.pool.Stat()
			if st.TotalConns() != total-1 || st.AcquiredConns() != 0 {
				t.Errorf("pool after Release: %d connections (%d acquired); want %d, none acquired: the holder's connection destroyed",
					st.TotalConns(), st.AcquiredConns(), total-1)
			}
			for _, c := range a.pool.AcquireAllIdle(ctx) {
				if c.Conn().PgConn().PID() == pid {
					t.Errorf("the holder's connection (backend %d) is back in the pool", pid)
				}
				c.Release()
			}
			// The strategy still works.
			if err := acquire(t, a, key+"-after").Release(ctx); err != nil {
				t.Errorf("Release of a fresh lease: %v", err)
			}
		})
	}
}

// TestCloseEndsSessions checks that Close ends the held sessions too: the
// lock is free at once (as when a process dies), and the lease's Release
// reports ErrNotOwner.
func TestCloseEndsSessions(t *testing.T) {
	a, b := newPG(t), newPG(t)
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
	deadline := time.Now().Add(time.Second)
	for {
		l2, err := b.Acquire(ctx, key)
		if err == nil {
			_ = l2.Release(ctx)
			break
		}
		if !errors.Is(err, strategies.ErrNotAcquired) || time.Now().After(deadline) {
			t.Fatalf("Acquire after the holder's Close: %v; want the lock within 1s", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := l.Release(ctx); !errors.Is(err, strategies.ErrNotOwner) {
		t.Errorf("Release after Close: got %v; want ErrNotOwner", err)
	}
	if _, err := a.Acquire(ctx, key); !errors.Is(err, errClosed) {
		t.Errorf("Acquire after Close: got %v; want errClosed", err)
	}
}

func TestCancelledContext(t *testing.T) {
	a := newPG(t)
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
