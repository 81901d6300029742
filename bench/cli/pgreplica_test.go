package cli

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lockbench/lockbench/internal/syncbuf"
)

// `up --pg-topology replica --pg-sync on` prints one DSN naming the
// primary and its standby, which reaches the primary, whose standby is
// synchronous; after Ctrl-C (the context) nothing answers there.
func TestUpPgReplica(t *testing.T) {
	if testing.Short() {
		t.Skip("starts every server; skipped with -short")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errb syncbuf.Buffer
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, []string{"up", "--pg-topology", "replica", "--pg-sync", "on", "--redis", "0"}, &out, &errb)
	}()
	dsnLine := regexp.MustCompile(`(?m)^export LOCKBENCH_PG_DSN='([^']+)'$`)
	var dsn string
	deadline := time.Now().Add(2 * time.Minute)
	for dsn == "" {
		if m := dsnLine.FindStringSubmatch(out.String()); m != nil && strings.Contains(errb.String(), "servers are up") {
			dsn = m[1]
			break
		}
		select {
		case err := <-done:
			t.Fatalf("up ended before its servers were up: %v\n%s%s", err, out.String(), errb.String())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("up printed no LOCKBENCH_PG_DSN in 2m:\n%s%s", out.String(), errb.String())
		}
	}
	if strings.Count(dsn, "127.0.0.1:") != 2 || !strings.Contains(dsn, "target_session_attrs=read-write") {
		t.Errorf("LOCKBENCH_PG_DSN=%s; want two hosts and target_session_attrs=read-write", dsn)
	}
	qctx, qcancel := context.WithTimeout(ctx, 20*time.Second)
	defer qcancel()
	conn, err := pgx.Connect(qctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	var recovery bool
	var mode string
	err = conn.QueryRow(qctx, "SELECT pg_is_in_recovery(), (SELECT sync_state FROM pg_stat_replication LIMIT 1)").Scan(&recovery, &mode)
	conn.Close(context.Background())
	if err != nil || recovery || mode != "sync" {
		t.Errorf("through the DSN: in recovery %v, standby %q (%v); want the primary, with a sync standby", recovery, mode, err)
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, ErrInterrupted) {
			t.Errorf("up after Ctrl-C: %v; want ErrInterrupted (exit 130)", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("up did not stop within 1m of Ctrl-C")
	}
	// Both servers are gone: neither host of the DSN answers.
	cctx, ccancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer ccancel()
	cfg, err := pgx.ParseConfig(strings.Replace(dsn, "target_session_attrs=read-write", "target_session_attrs=any", 1))
	if err != nil {
		t.Fatal(err)
	}
	if c, err := pgx.ConnectConfig(cctx, cfg); err == nil {
		c.Close(context.Background())
		t.Error("a server of the DSN still answers after up stopped")
	}
}

// A run on the replica topology labels the Postgres strategies' rows
// pg=replica (and sync=on), and leaves the other strategies' alone.
func TestRunPgReplica(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Postgres primary and standby; skipped with -short")
	}
	dir := t.TempDir()
	runCommand(t, "run", "--pg-topology", "replica", "--pg-sync", "on", "--strategy", "pg-unique,pg-advisory,nolock",
		"--payments", "300", "--out", dir)
	want := map[string]string{"pg-unique": "pg=replica,sync=on", "pg-advisory": "pg=replica,sync=on", "nolock": ""}
	ss := readSummaries(t, dir)
	if len(ss) != len(want) {
		t.Fatalf("%d runs; want %d", len(ss), len(want))
	}
	for _, s := range ss {
		if v, ok := want[s.Strategy]; !ok || s.Variant != v {
			t.Errorf("%s: variant %q; want %q", s.Strategy, s.Variant, v)
		}
		if s.Strategy != "nolock" && (s.Verdict != "safe" || s.Processed != s.Payments) {
			t.Errorf("%s: %s, processed %d of %d; want safe, every payment processed", s.Strategy, s.Verdict, s.Processed, s.Payments)
		}
	}
}
