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
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockbench/lockbench/servers"
	"github.com/lockbench/lockbench/strategies"
	"github.com/lockbench/lockbench/strategies/conformance"
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

// warmTo opens connections one at a time until o's pool has n.
func warmTo(t *testing.T, o *OnConflict, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var conns []*pgxpool.Conn
	defer func() {
		for _, c := range conns {
			c.Release()
		}
	}()
	for int(o.pool.Stat().TotalConns()) < n {
		c, err := o.pool.Acquire(ctx)
		if err != nil {
			t.Fatalf("warm the pool: %v", err)
		}
		conns = append(conns, c)
	}
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
	if info.Backend != strategies.BackendPostgres || !info.Fencing || !info.CrossProcess {
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

func TestAcquireRelease(t *testing.T) {
	a, b := newPG(t, 0), newPG(t, 0)
	key := testKey(t)
	ctx := context.Background()
	before := time.Now()
	l := acquire(t, a, key)
	if got := l.Key(); got != key {
		t.Errorf("Key() = %q; want %q", got, key)
	}
	if got := l.Token(); got <= 0 {
		t.Errorf("Token() = %d; want > 0", got)
	}
	if d, lo, hi := l.Deadline(), before.Add(strategies.DefaultTTL), time.Now().Add(strategies.DefaultTTL); d.Before(lo) || d.After(hi) {
		t.Errorf("Deadline() = %v; want between %v and %v", d, lo, hi)
	}
	// Held: both another instance and the same one are refused.
	for name, o := range map[string]*OnConflict{"other instance": b, "same instance": a} {
		if _, err := o.Acquire(ctx, key); !errors.Is(err, strategies.ErrNotAcquired) {
			t.Errorf("%s: Acquire of a held key: got %v; want ErrNotAcquired", name, err)
		}
	}
	if err := l.Release(ctx); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if err := l.Release(ctx); !errors.Is(err, strategies.ErrNotOwner) {
		t.Errorf("second Release: got %v; want ErrNotOwner", err)
	}
	l2 := acquire(t, b, key)
	if l2.Token() <= l.Token() {
		t.Errorf("next holder's token %d; want > %d", l2.Token(), l.Token())
	}
	// The first holder's second-hand Release must not free b's claim.
	if err := l.Release(ctx); !errors.Is(err, strategies.ErrNotOwner) {
		t.Errorf("old holder's Release: got %v; want ErrNotOwner", err)
	}
	if _, err := a.Acquire(ctx, key); !errors.Is(err, strategies.ErrNotAcquired) {
		t.Errorf("Acquire after the old holder's Release: got %v; want ErrNotAcquired", err)
	}
	if err := l2.Release(ctx); err != nil {
		t.Errorf("Release: %v", err)
	}
}

func TestCancelledContext(t *testing.T) {
	o := newPG(t, 0)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	start := time.Now()
	if _, err := o.Acquire(ctx, testKey(t)); !errors.Is(err, context.Canceled) {
		t.Errorf("Acquire with a cancelled context: got %v; want context.Canceled", err)
	}
	if took := time.Since(start); took > 100*time.Millisecond {
		t.Errorf("Acquire with a cancelled context took %v", took)
	}
}

// TestExpiry checks the lease: a claim that outlives its TTL can be taken by
// another contender with a larger token, and its holder's Release reports
// ErrNotOwner — also when nobody took it.
func TestExpiry(t *testing.T) {
	const ttl = 300 * time.Millisecond
	a, b := newPG(t, ttl), newPG(t, ttl)
	ctx := context.Background()
	key := testKey(t)
	stale := acquire(t, a, key)
	if _, err := b.Acquire(ctx, key); !errors.Is(err, strategies.ErrNotAcquired) {
		t.Fatalf("Acquire of a live claim: got %v; want ErrNotAcquired", err)
	}
	time.Sleep(ttl + 100*time.Millisecond)
	next := acquire(t, b, key)
	if next.Token() <= stale.Token() {
		t.Errorf("next holder's token %d; want > stale holder's %d", next.Token(), stale.Token())
	}
	if err := stale.Release(ctx); !errors.Is(err, strategies.ErrNotOwner) {
		t.Errorf("stale holder's Release: got %v; want ErrNotOwner", err)
	}
	if err := next.Release(ctx); err != nil {
		t.Errorf("Release: %v", err)
	}

	lapsed := acquire(t, a, key+"-lapsed")
	time.Sleep(ttl + 100*time.Millisecond)
	if err := lapsed.Release(ctx); !errors.Is(err, strategies.ErrNotOwner) {
		t.Errorf("Release of an expired, untaken claim: got %v; want ErrNotOwner", err)
	}
}

// TestMutualExclusion runs 32 contenders on one key, each taking the lock
// several times with the retry policy the benchmark uses, and checks that no
// two are ever inside at once and that the tokens of successive holders
// strictly increase.
func TestMutualExclusion(t *testing.T) {
	const contenders, rounds = 32, 5
	tests := []struct {
		name      string
		instances int
	}{
		{"one instance", 1},   // every contender shares one pool
		{"four instances", 4}, // contenders spread over four pools
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			os := make([]strategies.Strategy, tt.instances)
			for i := range os {
				o := newPG(t, 10*time.Second)
				// This case is about exclusion, not about how fast a
				// loaded two-core machine forks 32 backends at once.
				warmTo(t, o, contenders/tt.instances)
				os[i] = o
			}
			objects := make([]strategies.Strategy, contenders)
			for i := range objects {
				objects[i] = os[i%len(os)]
			}
			conformance.Contend(objects, testKey(t), rounds, time.Minute).Check(t, contenders*rounds)
		})
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

// TestServerDown stops the database under a held claim and checks that each
// call returns an error wrapping ErrUnavailable within 5s, then that the
// strategy recovers when the database is back.
func TestServerDown(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cluster, err := servers.Start(ctx, servers.Needs{Postgres: true}, servers.Options{})
	if err != nil {
		t.Fatalf("start postgres: %v", err)
	}
	defer cluster.Stop()
	cfg := strategies.Config{PostgresDSN: cluster.Endpoints().PostgresDSN}
	o, err := New(ctx, cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	defer o.Close()
	key := testKey(t)
	held := acquire(t, o, key)

	if err := cluster.Postgres.Kill(); err != nil {
		t.Fatalf("Kill: %v", err)
	}
	// Postgres backends run in their own process groups (each calls
	// setsid), so killing the postmaster's group leaves them to notice its
	// death and exit on their own; give them a moment.
	time.Sleep(500 * time.Millisecond)
	const bound = 5 * time.Second
	check := func(what string, err error, start time.Time) {
		t.Helper()
		took := time.Since(start)
		t.Logf("%s: %v after %v", what, err, took.Round(time.Millisecond))
		if !errors.Is(err, strategies.ErrUnavailable) {
			t.Errorf("%s with postgres stopped: got %v; want ErrUnavailable", what, err)
		}
		if took > bound {
			t.Errorf("%s with postgres stopped took %v; want < %v", what, took, bound)
		}
	}
	start := time.Now()
	_, err = o.Acquire(context.Background(), key+"-new")
	check("Acquire", err, start)
	start = time.Now()
	check("Release", held.Release(context.Background()), start)
	start = time.Now()
	_, err = New(context.Background(), cfg)
	check("New", err, start)

	if err := cluster.Postgres.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	// Pooled connections to the old server fail once each (the pool pings
	// only those idle for over a second), so allow a few failures.
	restarted := time.Now()
	for attempt := 1; ; attempt++ {
		l, err := o.Acquire(ctx, key+"-after")
		if err == nil {
			t.Logf("recovered after %d attempt(s), %v", attempt, time.Since(restarted).Round(time.Millisecond))
			if err := l.Release(ctx); err != nil {
				t.Errorf("Release after restart: %v", err)
			}
			return
		}
		if time.Since(restarted) > 10*time.Second {
			t.Fatalf("Acquire 10s after restart: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
