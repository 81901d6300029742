package servers

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// PgTopology is how a locally started Postgres is laid out
// (Options.PgTopology, --pg-topology).
type PgTopology string

const (
	// PgSingle is one server, the default.
	PgSingle PgTopology = "single"
	// PgReplica is a primary and one hot standby made from it with
	// pg_basebackup -R, streaming from it on loopback.
	PgReplica PgTopology = "replica"
)

// ParsePgTopology reads --pg-topology; "" is PgSingle.
func ParsePgTopology(s string) (PgTopology, error) {
	switch PgTopology(s) {
	case "", PgSingle:
		return PgSingle, nil
	case PgReplica:
		return PgReplica, nil
	}
	return "", fmt.Errorf("want %s or %s, got %q", PgSingle, PgReplica, s)
}

const (
	// pgStandbyName is the standby's cluster_name, which its WAL receiver
	// reports as its application_name: what synchronous_standby_names
	// names with Options.PgSync.
	pgStandbyName = "lockbench_standby"
	// basebackupTimeout bounds pg_basebackup.
	basebackupTimeout = 60 * time.Second
	// pgStreamTimeout bounds the wait for the standby to stream from the
	// primary, and with Options.PgSync for the primary to count it
	// synchronous.
	pgStreamTimeout = 20 * time.Second
)

// startStandby makes the primary's standby with pg_basebackup -R
// (streaming replication, primary_conninfo written for it), starts it on a
// port of its own and waits until it streams; with Options.PgSync the
// primary then waits for it on every commit (synchronous_standby_names).
func (c *Cluster) startStandby(ctx context.Context, bins binaries, primary *Postgres) error {
	s := &Postgres{}
	dir := filepath.Join(c.dir, "postgres-standby")
	s.dataDir, s.sockDir = filepath.Join(dir, "data"), filepath.Join(dir, "sock")
	s.server = server{
		name:    "postgres-1",
		logPath: filepath.Join(dir, "server.log"),
		stopSig: syscall.SIGINT,
		timeout: pgReadyTimeout,
		build:   func() (*exec.Cmd, error) { return s.command(bins), nil },
		ready:   func(ctx context.Context) error { return pingPostgres(ctx, s.DSN) },
		desc:    func() string { return fmt.Sprintf("postgres-1 (%s:%d)", s.addr(), s.port) },
		cl:      &c.state,
	}
	c.PostgresStandby = s
	s.host, s.bins, s.replica = c.opts.Host, bins, true
	if err := s.prepare(c.dir, dir); err != nil {
		return s.startErr(err)
	}
	if err := basebackup(ctx, bins, primary, s); err != nil {
		return s.startErr(err)
	}
	var err error
	for range startAttempts {
		ports, perr := freePorts(1)
		if perr != nil {
			return perr
		}
		s.port = ports[0]
		s.DSN = s.dsn()
		if err = s.start(ctx); !addrInUse(err) {
			break
		}
	}
	if err != nil {
		return err
	}
	if err := awaitStreaming(ctx, primary.DSN, false); err != nil {
		return s.startErr(err)
	}
	if !c.opts.PgSync {
		return nil
	}
	if err := setSyncStandby(ctx, primary.DSN, pgStandbyName); err != nil {
		return primary.startErr(err)
	}
	if err := awaitStreaming(ctx, primary.DSN, true); err != nil {
		return s.startErr(err)
	}
	return nil
}

// basebackup copies the running primary into the standby's data
// directory: pg_basebackup -R (standby.signal and primary_conninfo), WAL
// streamed alongside, a fast checkpoint, no fsync.
func basebackup(ctx context.Context, bins binaries, primary, standby *Postgres) error {
	ctx, cancel := context.WithTimeout(ctx, basebackupTimeout)
	defer cancel()
	cmd := exec.Command(filepath.Join(bins.pgBin, "pg_basebackup"),
		"-h", "127.0.0.1", "-p", strconv.Itoa(primary.port), "-U", primary.superuser(),
		"-D", standby.dataDir, "-R", "-X", "stream", "-c", "fast", "--no-sync", "-w")
	cmd.Env = childEnv()
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: standby.cred}
	cmd.Dir = filepath.Dir(standby.dataDir)
	ip, err := launch(cmd, standby.logPath, standby.cl.logWriter("pg_basebackup"))
	if err != nil {
		return fmt.Errorf("pg_basebackup: %w", err)
	}
	select {
	case <-ip.done:
		if ip.err != nil {
			return fmt.Errorf("pg_basebackup: %w (its output: %s)", ip.err, standby.logPath)
		}
		return dropSyncSetting(standby.dataDir)
	case <-ctx.Done():
		_ = ip.kill()
		return fmt.Errorf("pg_basebackup: %w", ctx.Err())
	}
}

// dropSyncSetting removes synchronous_standby_names from the
// postgresql.auto.conf a base backup copied from a primary that waited
// for its standby: promoted, the copy would wait for a standby it does not
// have, and every commit after a failover would hang.
func dropSyncSetting(dataDir string) error {
	path := filepath.Join(dataDir, "postgresql.auto.conf")
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var keep []string
	for _, line := range strings.SplitAfter(string(b), "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "synchronous_standby_names") {
			keep = append(keep, line)
		}
	}
	return os.WriteFile(path, []byte(strings.Join(keep, "")), 0o600)
}

// awaitStreaming waits until the primary at dsn has a standby streaming
// from it, which it counts synchronous when sync and asynchronous when not.
func awaitStreaming(ctx context.Context, dsn string, sync bool) error {
	ctx, cancel := context.WithTimeout(ctx, pgStreamTimeout)
	defer cancel()
	last := errors.New("no standby connected yet")
	for {
		state, mode, err := replicationState(ctx, dsn)
		switch {
		case err != nil:
			last = err
		case state == "streaming" && (mode == "sync") == sync:
			return nil
		default:
			last = fmt.Errorf("the standby is %s, %s", state, mode)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the standby does not stream from the primary (sync %v): %v", sync, last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// replicationState is the primary's view of its standby: pg_stat_replication's
// state and sync_state.
func replicationState(ctx context.Context, dsn string) (state, mode string, err error) {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return "", "", err
	}
	defer conn.Close(context.Background())
	err = conn.QueryRow(ctx, "SELECT state, sync_state FROM pg_stat_replication WHERE application_name = $1", pgStandbyName).Scan(&state, &mode)
	if errors.Is(err, pgx.ErrNoRows) {
		err = errors.New("no standby connected yet")
	}
	return state, mode, err
}

// setSyncStandby makes the primary at dsn wait on every commit for the
// standby named name; "" for none (asynchronous).
func setSyncStandby(ctx context.Context, dsn, name string) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	set := "ALTER SYSTEM RESET synchronous_standby_names"
	if name != "" {
		set = "ALTER SYSTEM SET synchronous_standby_names = " + pgx.Identifier{name}.Sanitize()
	}
	if _, err := conn.Exec(ctx, set); err != nil {
		return fmt.Errorf("set synchronous_standby_names: %w", err)
	}
	if _, err := conn.Exec(ctx, "SELECT pg_reload_conf()"); err != nil {
		return fmt.Errorf("reload the configuration: %w", err)
	}
	return nil
}

// Promote makes a standby the primary (pg_promote, waiting for it up to
// its timeout) and returns once it accepts writes.
func (p *Postgres) Promote(ctx context.Context) error {
	conn, err := pgx.Connect(ctx, p.DSN)
	if err != nil {
		return fmt.Errorf("servers: promote %s: %w", p.name, err)
	}
	defer conn.Close(context.Background())
	var ok bool
	if err := conn.QueryRow(ctx, "SELECT pg_promote(true, 10)").Scan(&ok); err != nil {
		return fmt.Errorf("servers: promote %s: %w", p.name, err)
	}
	if !ok {
		return fmt.Errorf("servers: promote %s: not promoted within 10s", p.name)
	}
	return nil
}

// InRecovery reports whether the server is a standby (pg_is_in_recovery).
func (p *Postgres) InRecovery(ctx context.Context) (bool, error) {
	conn, err := pgx.Connect(ctx, p.DSN)
	if err != nil {
		return false, err
	}
	defer conn.Close(context.Background())
	var in bool
	err = conn.QueryRow(ctx, "SELECT pg_is_in_recovery()").Scan(&in)
	return in, err
}

// multiHostDSN is one DSN naming the primary and then its standby, with
// target_session_attrs=read-write: a client connects to whichever of them
// accepts writes, and after a promotion finds the new primary itself.
func multiHostDSN(primary, standby *Postgres) string {
	u, err := url.Parse(primary.DSN)
	if err != nil {
		return primary.DSN
	}
	u.Host = strings.Join([]string{
		net.JoinHostPort(primary.addr(), strconv.Itoa(primary.port)),
		net.JoinHostPort(standby.addr(), strconv.Itoa(standby.port)),
	}, ",")
	q := u.Query()
	q.Set("target_session_attrs", "read-write")
	u.RawQuery = q.Encode()
	return u.String()
}

// pgReplicaErr says why the Options' Postgres layout cannot be started:
// nil when it can.
func (o Options) pgReplicaErr() error {
	if o.PgTopology != PgReplica {
		if o.PgSync {
			return errors.New("servers: Options.PgSync needs PgTopology replica")
		}
		return nil
	}
	if o.Secure != nil {
		return errors.New("servers: the Postgres replica topology is started plain only (Options.Secure)")
	}
	return nil
}

// Addr is the server's host:port.
func (p *Postgres) Addr() string { return net.JoinHostPort(p.addr(), strconv.Itoa(p.port)) }

// pgPair is the replica topology's two servers, for the failover fault:
// which one is the primary changes with each failover.
type pgPair struct {
	c *Cluster
}

// PgReplicated reports whether the target's Postgres is a primary with a
// standby that lockbench started.
func (t Target) PgReplicated() bool { return t.pg != nil }

// PgNodes are the replica topology's two servers, the first started as
// the primary (whichever is now): what a test stops to take the whole
// Postgres down. Nil for another target.
func (t Target) PgNodes() []Node {
	if t.pg == nil {
		return nil
	}
	return []Node{t.pg.c.Postgres, t.pg.c.PostgresStandby}
}

// PgSync reports whether the target's primary waits for its standby on
// every commit (Options.PgSync, or Cluster.SetPgSync since).
func (t Target) PgSync() bool { return t.pg != nil && t.pg.c.opts.PgSync }

// PgRoles returns the replica topology's primary and its standby as they
// are now; an error unless one is a primary and the other streams from it.
func (t Target) PgRoles(ctx context.Context) (primary, standby *Postgres, err error) {
	if t.pg == nil {
		return nil, nil, errors.New("servers: not a Postgres primary with a standby lockbench started (--pg-topology replica)")
	}
	ctx, cancel := context.WithTimeout(ctx, pgStreamTimeout)
	defer cancel()
	for {
		primary, standby, err = t.pg.roles(ctx)
		if err == nil {
			return primary, standby, nil
		}
		select {
		case <-ctx.Done():
			return nil, nil, fmt.Errorf("servers: the Postgres primary and standby have not settled: %w", err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (g *pgPair) roles(ctx context.Context) (primary, standby *Postgres, err error) {
	for _, p := range []*Postgres{g.c.Postgres, g.c.PostgresStandby} {
		in, err := p.InRecovery(ctx)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", p.name, err)
		}
		if in {
			standby = p
		} else {
			primary = p
		}
	}
	if primary == nil || standby == nil {
		return nil, nil, errors.New("not one primary and one standby")
	}
	if state, _, err := replicationState(ctx, primary.DSN); err != nil || state != "streaming" {
		return nil, nil, fmt.Errorf("the standby does not stream from the primary (%s, %v)", state, err)
	}
	return primary, standby, nil
}

// RouteReplication points the standby's link at addr (a proxy in front of
// its primary): its primary_conninfo, reloaded, restarts its WAL receiver
// there. It returns once the standby streams through addr and has received
// all the WAL primary had written when it was called.
func (p *Postgres) RouteReplication(ctx context.Context, primary *Postgres, addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, pgStreamTimeout)
	defer cancel()
	conninfo := fmt.Sprintf("host=%s port=%s user=%s application_name=%s", host, port, p.superuser(), pgStandbyName)
	if err := pgExecOne(ctx, p.DSN, "ALTER SYSTEM SET primary_conninfo = '"+strings.ReplaceAll(conninfo, "'", "''")+"'"); err != nil {
		return fmt.Errorf("servers: route %s's replication: %w", p.name, err)
	}
	if err := pgExecOne(ctx, p.DSN, "SELECT pg_reload_conf()"); err != nil {
		return fmt.Errorf("servers: route %s's replication: %w", p.name, err)
	}
	var target string
	if err := pgQueryOne(ctx, primary.DSN, "SELECT pg_current_wal_lsn()::text", &target); err != nil {
		return fmt.Errorf("servers: %s's WAL position: %w", primary.name, err)
	}
	last := errors.New("not streaming yet")
	for {
		var status string
		var sender int
		var caught bool
		err := pgQueryOne(ctx, p.DSN, "SELECT status, coalesce(sender_port, 0), coalesce(flushed_lsn >= $1::pg_lsn, false) FROM pg_stat_wal_receiver",
			[]any{target}, &status, &sender, &caught)
		switch {
		case err != nil:
			last = err
		case status == "streaming" && strconv.Itoa(sender) == port && caught:
			return nil
		default:
			last = fmt.Errorf("%s from port %d, caught up %v", status, sender, caught)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("servers: %s's replication through %s: %v", p.name, addr, last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// PgRebuild makes old, killed, a standby of the current primary again:
// Postgres cannot take a former primary back without pg_rewind, so its
// data directory is made anew with pg_basebackup from the primary. With
// Options.PgSync the primary then waits for it on every commit, as before.
func (t Target) PgRebuild(ctx context.Context, old, primary *Postgres) error {
	if t.pg == nil {
		return errors.New("servers: not a Postgres primary with a standby lockbench started")
	}
	c := t.pg.c
	if err := old.kill(); err != nil {
		return err
	}
	if err := os.RemoveAll(old.dataDir); err != nil {
		return fmt.Errorf("servers: remake %s: %w", old.name, err)
	}
	if err := basebackup(ctx, old.bins, primary, old); err != nil {
		return old.startErr(err)
	}
	if err := old.start(ctx); err != nil {
		return err
	}
	// The promoted server may carry either setting in the configuration
	// its own base backup copied: it is set as the cluster's is.
	name := ""
	if c.opts.PgSync {
		name = pgStandbyName
	}
	if err := setSyncStandby(ctx, primary.DSN, name); err != nil {
		return primary.startErr(err)
	}
	if err := awaitStreaming(ctx, primary.DSN, c.opts.PgSync); err != nil {
		return old.startErr(err)
	}
	return nil
}

// pgExecOne runs sql on dsn, on a connection of its own.
func pgExecOne(ctx context.Context, dsn, sql string) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, sql)
	return err
}

// pgQueryOne scans the one row of sql (with args, a []any, optional) on
// dsn into dest.
func pgQueryOne(ctx context.Context, dsn, sql string, rest ...any) error {
	var args []any
	if len(rest) > 0 {
		if a, ok := rest[0].([]any); ok {
			args, rest = a, rest[1:]
		}
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	return conn.QueryRow(ctx, sql, args...).Scan(rest...)
}

// SetPgSync makes the replica topology's primary wait for its standby on
// every commit (on) or not, and returns once the primary counts the
// standby so; the cells of `verdicts --pg-sync on` run both ways on one
// topology. It does nothing when the layout is already so, and must not
// run beside a run on the cluster. On a cluster without a standby it
// refuses on, and off does nothing.
func (c *Cluster) SetPgSync(ctx context.Context, on bool) error {
	if c == nil || c.PostgresStandby == nil {
		if on {
			return errors.New("servers: no Postgres standby to wait for (Options.PgTopology replica)")
		}
		return nil
	}
	if c.opts.PgSync == on {
		return nil
	}
	primary, _, err := Target{pg: &pgPair{c: c}}.PgRoles(ctx)
	if err != nil {
		return err
	}
	name := ""
	if on {
		name = pgStandbyName
	}
	if err := setSyncStandby(ctx, primary.DSN, name); err != nil {
		return primary.startErr(err)
	}
	if err := awaitStreaming(ctx, primary.DSN, on); err != nil {
		return err
	}
	c.opts.PgSync = on
	return nil
}
