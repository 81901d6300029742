package servers

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// pgExec runs sql on dsn.
func pgExec(ctx context.Context, dsn, sql string, args ...any) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, sql, args...)
	return err
}

// pgCount is SELECT count(*) FROM t on dsn.
func pgCount(ctx context.Context, dsn, table string) (int, error) {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return 0, err
	}
	defer conn.Close(context.Background())
	var n int
	err = conn.QueryRow(ctx, "SELECT count(*) FROM "+table).Scan(&n)
	return n, err
}

// The replica topology: a primary and a hot standby streaming from it,
// one DSN naming both that reaches the primary; after the primary is
// killed and the standby promoted, the same DSN reaches the standby, with
// what was replicated.
func TestPostgresReplica(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Postgres primary and standby; skipped with -short")
	}
	c := start(t, Needs{Postgres: true}, Options{PgTopology: PgReplica})
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	p, s := c.Postgres, c.PostgresStandby
	if s == nil {
		t.Fatal("no standby started")
	}
	dsn := c.Endpoints().PostgresDSN
	if !strings.Contains(dsn, "target_session_attrs=read-write") || strings.Count(dsn, ",") < 1 {
		t.Fatalf("DSN %q; want both hosts and target_session_attrs=read-write", dsn)
	}
	for _, n := range []struct {
		pg   *Postgres
		want bool
	}{{p, false}, {s, true}} {
		in, err := n.pg.InRecovery(ctx)
		if err != nil || in != n.want {
			t.Fatalf("%s in recovery: %v, %v; want %v", n.pg.name, in, err, n.want)
		}
	}
	if err := pgExec(ctx, dsn, "CREATE TABLE t (id int PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	if err := pgExec(ctx, dsn, "INSERT INTO t SELECT generate_series(1, 100)"); err != nil {
		t.Fatal(err)
	}
	// Asynchronous: the standby has the rows a moment later.
	deadline := time.Now().Add(10 * time.Second)
	for {
		n, err := pgCount(ctx, s.DSN, "t")
		if err == nil && n == 100 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the standby has %d rows (%v) 10s after the commit; want 100", n, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := pgExec(ctx, s.DSN, "INSERT INTO t VALUES (101)"); err == nil {
		t.Fatal("the standby took a write")
	}
	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := pgExec(ctx, dsn, "INSERT INTO t VALUES (102)"); err == nil {
		t.Fatal("the DSN took a write with the primary dead and the standby not promoted")
	}
	began := time.Now()
	if err := s.Promote(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("promoted in %s", time.Since(began).Round(time.Millisecond))
	if err := pgExec(ctx, dsn, "INSERT INTO t VALUES (102)"); err != nil {
		t.Fatalf("the DSN after the promotion: %v", err)
	}
	if n, err := pgCount(ctx, dsn, "t"); err != nil || n != 101 {
		t.Fatalf("the new primary has %d rows (%v); want 101", n, err)
	}
}

// With PgSync the primary waits for the standby on every commit: the
// standby counts as synchronous, and with it down a commit does not
// return.
func TestPostgresReplicaSync(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Postgres primary and standby; skipped with -short")
	}
	c := start(t, Needs{Postgres: true}, Options{PgTopology: PgReplica, PgSync: true})
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	_, mode, err := replicationState(ctx, c.Postgres.DSN)
	if err != nil || mode != "sync" {
		t.Fatalf("sync_state %q (%v); want sync", mode, err)
	}
	if err := pgExec(ctx, c.Postgres.DSN, "CREATE TABLE t (id int)"); err != nil {
		t.Fatal(err)
	}
	if err := c.PostgresStandby.Kill(); err != nil {
		t.Fatal(err)
	}
	wctx, wcancel := context.WithTimeout(ctx, 2*time.Second)
	defer wcancel()
	err = pgExec(wctx, c.Postgres.DSN, "INSERT INTO t VALUES (1)")
	if !errors.Is(err, context.DeadlineExceeded) && (err == nil || !strings.Contains(err.Error(), "timeout")) {
		t.Fatalf("a commit with the synchronous standby down: %v; want it to wait (the context's deadline)", err)
	}
}

// SetPgSync turns the standby synchronous and back on a running
// topology. PgRebuild remakes a killed server as a standby of the primary,
// synchronous as the cluster's setting says, without the primary's
// synchronous_standby_names in its copy: promoted, it takes writes at once
// instead of waiting for a standby it does not have.
func TestSetPgSyncAndRebuild(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Postgres primary and standby; skipped with -short")
	}
	c := start(t, Needs{Postgres: true}, Options{PgTopology: PgReplica})
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	mode := func(p *Postgres) string {
		t.Helper()
		_, m, err := replicationState(ctx, p.DSN)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	if err := c.SetPgSync(ctx, true); err != nil {
		t.Fatal(err)
	}
	primary, standby := c.Postgres, c.PostgresStandby
	if m := mode(primary); m != "sync" {
		t.Fatalf("after SetPgSync(true): %s; want sync", m)
	}
	target := Target{pg: &pgPair{c: c}}
	// A copy of the synchronous primary.
	if err := standby.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := target.PgRebuild(ctx, standby, primary); err != nil {
		t.Fatal(err)
	}
	if m := mode(primary); m != "sync" {
		t.Fatalf("after the rebuild with sync on: %s; want sync", m)
	}
	if p, s, err := target.PgRoles(ctx); err != nil || p != primary || s != standby {
		t.Fatalf("roles %v, %v (%v); want the primary and its rebuilt standby", p, s, err)
	}
	if err := primary.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := standby.Promote(ctx); err != nil {
		t.Fatal(err)
	}
	wctx, wcancel := context.WithTimeout(ctx, 5*time.Second)
	defer wcancel()
	if err := pgExec(wctx, c.Endpoints().PostgresDSN, "CREATE TABLE after_failover (id int)"); err != nil {
		t.Fatalf("a write on the promoted copy: %v; want it to commit without a standby", err)
	}
	if err := target.PgRebuild(ctx, primary, standby); err != nil {
		t.Fatal(err)
	}
	if m := mode(standby); m != "sync" {
		t.Fatalf("the promoted server after the rebuild: %s; want sync (the cluster's setting)", m)
	}
	if err := c.SetPgSync(ctx, false); err != nil {
		t.Fatal(err)
	}
	if m := mode(standby); m != "async" {
		t.Fatalf("after SetPgSync(false): %s; want async", m)
	}
}

func TestPgReplicaOptions(t *testing.T) {
	for _, o := range []Options{{PgSync: true}, {PgTopology: PgReplica, Secure: &Secure{}}} {
		if _, err := Start(context.Background(), Needs{Postgres: true}, o); err == nil {
			t.Errorf("Start with %+v: no error", o)
		}
	}
	for in, want := range map[string]PgTopology{"": PgSingle, "single": PgSingle, "replica": PgReplica} {
		if got, err := ParsePgTopology(in); err != nil || got != want {
			t.Errorf("ParsePgTopology(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := ParsePgTopology("cluster"); err == nil {
		t.Error(`ParsePgTopology("cluster"): no error`)
	}
}
