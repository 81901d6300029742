package servers

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

const (
	// pgReadyTimeout bounds the wait for a pgx connection to work.
	pgReadyTimeout = 20 * time.Second
	// initdbTimeout bounds initdb.
	initdbTimeout = 60 * time.Second
	// pgMaxConnections is the server's max_connections.
	pgMaxConnections = 300
	// pgUser is the superuser initdb creates, and the OS user postgres runs
	// as when we are root.
	pgUser = "postgres"
)

// pgState is the implementation part of Postgres.
type pgState struct {
	server
	port    int
	dataDir string
	sockDir string
	cred    *syscall.Credential // nil: run as ourselves
	// secure is Options.Secure: ssl=on with its certificate, and the
	// superuser Secure.User with a scram-sha-256 password over TCP.
	secure *Secure
	// host is Options.Host: the server also listens there and admits its
	// subnet (admitHostSubnet); "" for loopback only.
	host string
	// bins are the binaries it was started with (a standby is remade
	// with pg_basebackup after a failover); replica is true in the
	// replica topology, whose servers carry cluster_name pgStandbyName
	// (the application_name their WAL receiver reports when a standby).
	bins    binaries
	replica bool
}

func (c *Cluster) startPostgres(ctx context.Context, bins binaries) error {
	p := &Postgres{}
	dir := filepath.Join(c.dir, "postgres")
	p.dataDir, p.sockDir = filepath.Join(dir, "data"), filepath.Join(dir, "sock")
	p.server = server{
		name:    "postgres",
		logPath: filepath.Join(dir, "server.log"),
		stopSig: syscall.SIGINT, // fast shutdown: SIGTERM would wait for every client to leave
		timeout: pgReadyTimeout,
		build:   func() (*exec.Cmd, error) { return p.command(bins), nil },
		ready:   func(ctx context.Context) error { return pingPostgres(ctx, p.DSN) },
		desc:    func() string { return fmt.Sprintf("postgres (%s:%d)", p.addr(), p.port) },
		cl:      &c.state,
	}
	c.Postgres = p
	p.secure, p.host = c.opts.Secure, c.opts.Host
	p.bins, p.replica = bins, c.opts.PgTopology == PgReplica
	if p.replica {
		// Either of the two may be the primary after a failover.
		p.name = "postgres-0"
		p.desc = func() string { return fmt.Sprintf("postgres-0 (%s:%d)", p.addr(), p.port) }
	}
	if err := p.prepare(c.dir, dir); err != nil {
		return p.startErr(err)
	}
	if err := p.prepareSecure(); err != nil {
		return p.startErr(err)
	}
	if err := p.initdb(ctx, bins); err != nil {
		return p.startErr(err)
	}
	if err := p.admitHostSubnet(); err != nil {
		return p.startErr(err)
	}
	var err error
	for range startAttempts {
		ports, perr := freePorts(1)
		if perr != nil {
			return perr
		}
		p.port = ports[0]
		p.DSN = p.dsn()
		if err = p.start(ctx); !addrInUse(err) {
			break
		}
	}
	if err != nil || c.opts.PgTopology != PgReplica {
		return err
	}
	return c.startStandby(ctx, bins, p)
}

// prepare makes the server's directories. PostgreSQL refuses to run as root,
// so as root it runs as the postgres user, which must own them and be able
// to reach them through the cluster's directory.
func (p *Postgres) prepare(clusterDir, dir string) error {
	for _, d := range []string{dir, p.sockDir} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return err
		}
	}
	var err error
	p.cred, err = runAs("PostgreSQL", pgUser, clusterDir, dir, p.sockDir)
	return err
}

// initdb creates the database cluster: trust authentication (its rules
// admit loopback only; admitHostSubnet adds Options.Host's), C locale so no OS locale needs to be installed, and no fsync.
func (p *Postgres) initdb(ctx context.Context, bins binaries) error {
	ctx, cancel := context.WithTimeout(ctx, initdbTimeout)
	defer cancel()
	cmd := exec.Command(filepath.Join(bins.pgBin, "initdb"),
		"-D", p.dataDir, "-U", p.superuser(), "--auth=trust",
		"--locale=C", "--encoding=UTF8", "--no-sync")
	if p.secure.auth() {
		cmd.Args = append(cmd.Args, "--auth-host=scram-sha-256", "--pwfile="+p.pwPath())
	}
	cmd.Env = childEnv()
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: p.cred}
	cmd.Dir = filepath.Dir(p.dataDir)
	ip, err := launch(cmd, p.logPath, p.cl.logWriter("initdb"))
	if err != nil {
		return fmt.Errorf("initdb: %w", err)
	}
	select {
	case <-ip.done:
		if ip.err != nil {
			return fmt.Errorf("initdb: %w", ip.err)
		}
		return nil
	case <-ctx.Done():
		_ = ip.kill()
		return fmt.Errorf("initdb: %w", ctx.Err())
	}
}

func (p *Postgres) command(bins binaries) *exec.Cmd {
	cmd := exec.Command(filepath.Join(bins.pgBin, "postgres"),
		"-D", p.dataDir,
		"-p", strconv.Itoa(p.port),
		"-k", p.sockDir,
		"-c", "listen_addresses="+p.listenAddresses(),
		"-c", "fsync=off",
		// synchronous_commit stays on: a commit's WAL reaches the kernel
		// before it is acknowledged, so a killed server (kill-node) keeps
		// every acknowledged commit, sequences included. Without it a crash
		// can hand out a fencing token twice.
		"-c", "full_page_writes=off",
		"-c", "max_connections="+strconv.Itoa(pgMaxConnections),
	)
	if p.replica {
		cmd.Args = append(cmd.Args, "-c", "cluster_name="+pgStandbyName)
	}
	if p.secure.tls() {
		cmd.Args = append(cmd.Args, "-c", "ssl=on",
			"-c", "ssl_cert_file="+p.certPath(), "-c", "ssl_key_file="+p.keyPath())
	}
	cmd.Dir = filepath.Dir(p.dataDir)
	cmd.Env = childEnv()
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: p.cred}
	return cmd
}

// pingPostgres connects and runs SELECT 1.
func pingPostgres(ctx context.Context, dsn string) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	var one int
	return conn.QueryRow(ctx, "SELECT 1").Scan(&one)
}

// Kill SIGKILLs the server and all its backends and waits until they are
// gone, as a crash would. Killing a server that is not running does nothing.
func (p *Postgres) Kill() error { return p.kill() }

// Start starts the server again on the same port and data directory (it
// runs crash recovery first after Kill) and waits until a connection works.
// Starting a running server does nothing; after Cluster.Stop it returns
// ErrStopped.
func (p *Postgres) Start(ctx context.Context) error {
	// A backend of the killed server that is slow to die still holds its
	// shared memory, and postgres refuses to start beside it: try again a
	// few times, a moment apart.
	var err error
	for range pgRestartAttempts {
		if err = p.start(ctx); err == nil || ctx.Err() != nil || errors.Is(err, ErrStopped) {
			return err
		}
		select {
		case <-time.After(pgRestartPause):
		case <-ctx.Done():
			return err
		}
	}
	return err
}

// pgRestartAttempts and pgRestartPause bound Start's retries: 3, 300ms apart.
const (
	pgRestartAttempts = 3
	pgRestartPause    = 300 * time.Millisecond
)
