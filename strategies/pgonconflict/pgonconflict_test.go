package pgonconflict

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
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
		fmt.Fprintln(os.Stderr, "pgonconflict: start postgres:", err)
		return 1
	}
	defer cluster.Stop()
	dsn = ep.PostgresDSN
	return m.Run()
}

// newPG returns a strategy on the shared database, closed when t ends.
func newPG(t *testing.T, ttl time.Duration) *OnConflict {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	o, err := New(ctx, strategies.Config{PostgresDSN: dsn, TTL: ttl, Owner: t.Name()})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { _ = o.Close() })
	return o
}

// testKey returns a lock key no other test uses, even across runs against
// one database.
func testKey(t *testing.T) string {
	return fmt.Sprintf("%s-%d", t.Name(), time.Now().UnixNano())
}

func acquire(t *testing.T, o *OnConflict, key string) strategies.Lease {
	t.Helper()
	l, err := o.Acquire(context.Background(), key)
	if err != nil {
		t.Fatalf("Acquire(%q): %v", key, err)
	}
	return l
}

func TestRegistered(t *testing.T) {
	info, ok := strategies.Lookup("pg-onconflict")
	if !ok {
		t.Fatal(`Lookup("pg-onconflict"): not registered`)
	}
	if info.Need.Backend != strategies.BackendPostgres || !info.Fencing || !info.CrossProcess {
		t.Errorf("Info = %+v; want Backend postgres, Fencing and CrossProcess", info)
	}
	s, err := strategies.New(context.Background(), "pg-onconflict", strategies.Config{PostgresDSN: dsn})
	if err != nil {
		t.Fatalf("strategies.New: %v", err)
	}
	defer s.Close()
	if strategies.Blocks(s) {
		t.Error("Blocks = true; want false")
	}
}

// TestFactoryError checks that the registered factory reports a database
// nobody listens on with a nil Strategy (not a nil *OnConflict in a non-nil
// interface).
func TestFactoryError(t *testing.T) {
	start := time.Now()
	s, err := strategies.New(context.Background(), "pg-onconflict", strategies.Config{PostgresDSN: "postgres://u@127.0.0.1:1/db"})
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

// TestLapsedClaim checks the expiry clause of releaseSQL and extendSQL: the
// row stays in the table after its claim lapses, with the holder's owner and
// token, so Extend and Release of an expired claim that nobody took since
// must still report ErrNotOwner. (The conformance suite's
// stale-release-after-expiry and extend cases check a claim somebody else
// took.)
func TestLapsedClaim(t *testing.T) {
	const ttl = 300 * time.Millisecond
	o := newPG(t, ttl)
	ctx := context.Background()
	lapsed := acquire(t, o, testKey(t))
	time.Sleep(ttl + 100*time.Millisecond)
	if err := lapsed.(strategies.Extender).Extend(ctx, time.Minute); !errors.Is(err, strategies.ErrNotOwner) {
		t.Errorf("Extend of an expired, untaken claim: got %v; want ErrNotOwner", err)
	}
	if err := lapsed.Release(ctx); !errors.Is(err, strategies.ErrNotOwner) {
		t.Errorf("Release of an expired, untaken claim: got %v; want ErrNotOwner", err)
	}
}

// TestExtendNeverShortens checks extendSQL's greatest(): an Extend with a
// TTL shorter than what is left of the claim leaves the claim's expiry (on
// the database's clock) and the Deadline alone, and a longer one moves both
// on; after Release, Extend reports ErrNotOwner.
func TestExtendNeverShortens(t *testing.T) {
	const ttl = 10 * time.Second
	o := newPG(t, ttl)
	ctx := context.Background()
	key := testKey(t)
	l := acquire(t, o, key)
	ext := l.(strategies.Extender)
	left := func() time.Duration {
		t.Helper()
		var d time.Duration
		if err := o.pool.QueryRow(ctx, `SELECT expires_at - now() FROM lockbench_locks WHERE key = $1`, key).Scan(&d); err != nil {
			t.Fatalf("read the claim's expiry: %v", err)
		}
		return d
	}
	dl := l.Deadline()
	if err := ext.Extend(ctx, time.Second); err != nil {
		t.Fatalf("Extend(1s): got %v; want nil", err)
	}
	if d := left(); d < ttl-time.Second {
		t.Errorf("after Extend(1s) of a %v claim: %v left; want about %v (never shortened)", ttl, d, ttl)
	}
	if got := l.Deadline(); !got.Equal(dl) {
		t.Errorf("Deadline after Extend(1s) of a %v claim: moved by %v; want unchanged", ttl, got.Sub(dl))
	}
	const longer = time.Minute
	before := time.Now()
	if err := ext.Extend(ctx, longer); err != nil {
		t.Fatalf("Extend(%v): got %v; want nil", longer, err)
	}
	if d := left(); d < longer-time.Second || d > longer {
		t.Errorf("after Extend(%v): %v left; want about %v", longer, d, longer)
	}
	if got, lo, hi := l.Deadline(), before.Add(longer), time.Now().Add(longer); got.Before(lo) || got.After(hi) {
		t.Errorf("Deadline after Extend(%v): %v from the call; want the time before the statement plus %v", longer, got.Sub(before), longer)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if err := ext.Extend(ctx, longer); !errors.Is(err, strategies.ErrNotOwner) {
		t.Errorf("Extend after Release: got %v; want ErrNotOwner", err)
	}
}

// TestTokensNeverDecrease hammers a few keys with contenders whose leases
// expire while they hold them (some never release), and has the database
// itself check, in a trigger on the claim row, that each new claim's token
// is larger than the one it replaces: the order that matters is the
// database's, which a client cannot observe when leases overlap.
func TestTokensNeverDecrease(t *testing.T) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer conn.Close(ctx)
	newPG(t, 0) // the table exists
	for _, stmt := range []string{
		`CREATE OR REPLACE FUNCTION lockbench_test_tokens() RETURNS trigger AS $$
		BEGIN
			IF NEW.token <> OLD.token AND NEW.token <= OLD.token THEN
				RAISE EXCEPTION 'token went from % to % on %', OLD.token, NEW.token, NEW.key;
			END IF;
			RETURN NEW;
		END $$ LANGUAGE plpgsql`,
		`CREATE OR REPLACE TRIGGER lockbench_test_tokens BEFORE UPDATE ON lockbench_locks
			FOR EACH ROW WHEN (NEW.key LIKE 'TestTokensNeverDecrease%') EXECUTE FUNCTION lockbench_test_tokens()`,
	} {
		if _, err := conn.Exec(ctx, stmt); err != nil {
			t.Fatalf("create trigger: %v", err)
		}
	}
	defer conn.Exec(ctx, `DROP TRIGGER IF EXISTS lockbench_test_tokens ON lockbench_locks`)

	const (
		ttl        = 20 * time.Millisecond
		contenders = 16
		keys       = 3
		run        = 2 * time.Second
	)
	o := newPG(t, ttl)
	base := testKey(t)
	var claims atomic.Int64
	rctx, cancel := context.WithTimeout(ctx, run)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, contenders)
	for i := range contenders {
		wg.Go(func() {
			for n := 0; rctx.Err() == nil; n++ {
				key := fmt.Sprintf("%s-%d", base, (i+n)%keys)
				l, err := o.Acquire(rctx, key)
				switch {
				case errors.Is(err, strategies.ErrNotAcquired):
					continue
				case rctx.Err() != nil:
					return
				case err != nil:
					errs <- err
					return
				}
				claims.Add(1)
				time.Sleep(time.Duration(n%3) * ttl / 2) // 0, ½ or 1 TTL: some expire
				if n%4 == 0 {
					continue // "crash": never release
				}
				if err := l.Release(ctx); err != nil && !errors.Is(err, strategies.ErrNotOwner) {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("contender: %v", err)
	}
	t.Logf("%d claims", claims.Load())
	if claims.Load() < 10 {
		t.Errorf("only %d claims in %v", claims.Load(), run)
	}
}

// TestConcurrentNew builds several strategies at once on an empty database:
// the schema is created once, without a unique-violation error.
func TestConcurrentNew(t *testing.T) {
	u, err := url.Parse(dsn)
	if err != nil || u.Scheme == "" {
		t.Skip("LOCKBENCH_PG_DSN is not a URL; cannot derive a scratch database")
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer conn.Close(ctx)
	db := fmt.Sprintf("lockbench_test_%d", time.Now().UnixNano())
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+db); err != nil {
		t.Fatalf("create database: %v", err)
	}
	defer conn.Exec(ctx, "DROP DATABASE "+db+" WITH (FORCE)")
	u.Path = "/" + db
	cfg := strategies.Config{PostgresDSN: u.String()}

	const n = 8
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			o, err := New(ctx, cfg)
			if err == nil {
				o.Close()
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("New #%d: %v", i, err)
		}
	}
	o, err := New(ctx, cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	defer o.Close()
	l, err := o.Acquire(ctx, "k")
	if err != nil {
		t.Fatalf("Acquire on the new schema: %v", err)
	}
	if got := l.Token(); got != 1 {
		t.Errorf("first token on a new sequence = %d; want 1", got)
	}

	// The sequence is this database's alone, so the numbers are exact:
	// attempts that find the claim live draw nothing, and a claim on the
	// update path draws one number for the row it would have inserted and
	// one, its token, under the row lock.
	for range 3 {
		if _, err := o.Acquire(ctx, "k"); !errors.Is(err, strategies.ErrNotAcquired) {
			t.Fatalf("Acquire of a held key: got %v; want ErrNotAcquired", err)
		}
	}
	if err := l.Release(ctx); err != nil {
		t.Fatalf("Release: %v", err)
	}
	l, err = o.Acquire(ctx, "k")
	if err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	if got := l.Token(); got != 3 {
		t.Errorf("second holder's token = %d; want 3", got)
	}

	// A dropped table and sequence are created again by the next Acquire.
	if _, err := o.pool.Exec(ctx, "DROP TABLE lockbench_locks; DROP SEQUENCE lockbench_lock_tokens"); err != nil {
		t.Fatalf("drop schema: %v", err)
	}
	l, err = o.Acquire(ctx, "k")
	if err != nil {
		t.Fatalf("Acquire after the schema was dropped: %v", err)
	}
	if got := l.Token(); got != 1 {
		t.Errorf("first token on a re-created sequence = %d; want 1", got)
	}
}

// TestPasswordNotShown checks that errors never quote the DSN's password.
func TestPasswordNotShown(t *testing.T) {
	const secret = "s3cr3t-pw"
	tests := []struct {
		name, dsn string
	}{
		{"unparsable URL", "postgres://u:" + secret + "@127.0.0.1:notaport/db"},                      // parse error
		{"unparsable key/value", "host=127.0.0.1 password=" + secret + " port=x"},                    // parse error
		{"nobody listening", "postgres://u:" + secret + "@127.0.0.1:1/db?connect_timeout=1"},         // connect error
		{"bad keyword", "host=127.0.0.1 password='" + secret + "' sslmode=nonsense dbname=x"},        // validation error
		{"broken quoting", "host=127.0.0.1 password='" + secret + " dbname=x"},                       // unterminated quote
		{"URL with odd escapes", "postgres://u:" + secret + "%zz@127.0.0.1:5432/db?sslmode=disable"}, // bad escape
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			o, err := New(ctx, strategies.Config{PostgresDSN: tt.dsn})
			if err == nil {
				o.Close()
				t.Fatal("New succeeded; want an error")
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("error shows the password: %v", err)
			}
		})
	}
}

// TestReleaseServerDown stops the database under a held claim and checks
// that Release returns an error wrapping ErrUnavailable within 5s
// (DefaultStatementTimeout bounds it). (The conformance suite's server-down
// case checks Acquire, New and the recovery after a restart; its extend
// case checks Extend.)
func TestReleaseServerDown(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cluster, err := servers.Start(ctx, servers.Needs{Postgres: true}, servers.Options{})
	if err != nil {
		t.Fatalf("start postgres: %v", err)
	}
	defer cluster.Stop()
	o, err := New(ctx, strategies.Config{PostgresDSN: cluster.Endpoints().PostgresDSN})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	defer o.Close()
	held := acquire(t, o, testKey(t))
	if err := cluster.Postgres.Kill(); err != nil {
		t.Fatalf("Kill: %v", err)
	}
	const bound = 5 * time.Second
	start := time.Now()
	err = held.Release(context.Background())
	took := time.Since(start)
	t.Logf("Release: %v after %v", err, took.Round(time.Millisecond))
	if !errors.Is(err, strategies.ErrUnavailable) {
		t.Errorf("Release with postgres stopped: got %v; want ErrUnavailable", err)
	}
	if took > bound {
		t.Errorf("Release with postgres stopped took %v; want < %v", took, bound)
	}
}
