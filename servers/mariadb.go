package servers

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"
)

const (
	// mariaReadyTimeout bounds the wait for a MariaDB server to accept the
	// lockbench user (InnoDB's start, or its crash recovery after Kill).
	mariaReadyTimeout = 30 * time.Second
	// mariaInstallTimeout bounds mariadb-install-db.
	mariaInstallTimeout = 60 * time.Second
	// mariaMaxConnections is the server's max_connections: every instance
	// holds a connection per held lock and a warm pool besides.
	mariaMaxConnections = 500
	// mariaOSUser is the OS user mariadbd runs as when we are root (it
	// refuses to run as root unless told to): Debian's mysql.
	mariaOSUser = "mysql"
	// MariaDBUser and MariaDBDatabase are the user and database a locally
	// started MariaDB has for lockbench; the user's password is generated
	// per Cluster (16 random bytes, in hex).
	MariaDBUser     = "lockbench"
	MariaDBDatabase = "lockbench"
)

// mariaState is the implementation part of MariaDB.
type mariaState struct {
	server
	addr     string // host:port
	dataDir  string
	sockPath string
	initPath string              // the SQL run at every start: the user, its password, the database
	cred     *syscall.Credential // nil: run as ourselves
}

func (c *Cluster) startMariaDB(ctx context.Context, bins binaries) error {
	m := &MariaDB{}
	dir := filepath.Join(c.dir, "mariadb")
	m.dataDir = filepath.Join(dir, "data")
	m.sockPath = filepath.Join(dir, "mariadb.sock")
	m.initPath = filepath.Join(dir, "init.sql")
	m.server = server{
		name:    "mariadb",
		logPath: filepath.Join(dir, "server.log"),
		stopSig: syscall.SIGTERM, // a clean shutdown: InnoDB flushes and exits
		timeout: mariaReadyTimeout,
		build:   func() (*exec.Cmd, error) { return m.command(bins), nil },
		ready:   func(ctx context.Context) error { return pingMySQL(ctx, m.DSN) },
		desc:    func() string { return "mariadb (" + m.addr + ")" },
		cl:      &c.state,
	}
	c.MariaDB = m
	password, err := newPassword()
	if err != nil {
		return m.startErr(err)
	}
	if err := m.prepare(c.dir, dir, password); err != nil {
		return m.startErr(err)
	}
	if err := m.install(ctx, bins); err != nil {
		return m.startErr(err)
	}
	for range startAttempts {
		ports, perr := freePorts(1)
		if perr != nil {
			return perr
		}
		m.addr = net.JoinHostPort(c.host(), strconv.Itoa(ports[0]))
		m.DSN = mariaDSN(password, m.addr)
		if err = m.start(ctx); !addrInUse(err) {
			break
		}
	}
	return err
}

// newPassword returns 16 random bytes in hex: the lockbench user's
// password, new for every Cluster.
func newPassword() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// mariaDSN is the DSN of the lockbench user at addr.
func mariaDSN(password, addr string) string {
	cfg := mysql.NewConfig()
	cfg.User, cfg.Passwd, cfg.Net, cfg.Addr, cfg.DBName = MariaDBUser, password, "tcp", addr, MariaDBDatabase
	return cfg.FormatDSN()
}

// prepare makes the server's directory and its init file. mariadbd does
// not run as root without being told to, so as root it runs as the mysql
// user, as PostgreSQL runs as postgres (Postgres.prepare): that user owns
// the directory and reaches it through the cluster's, made traversable.
func (m *MariaDB) prepare(clusterDir, dir, password string) error {
	if err := os.Mkdir(dir, 0o700); err != nil {
		return err
	}
	// Run at every start, so it must be idempotent. The user is admitted
	// from any host: the server listens on loopback or Options.Host only.
	init := strings.Join([]string{
		fmt.Sprintf("CREATE USER IF NOT EXISTS '%s'@'%%' IDENTIFIED BY '%s';", MariaDBUser, password),
		fmt.Sprintf("GRANT ALL PRIVILEGES ON *.* TO '%s'@'%%';", MariaDBUser),
		fmt.Sprintf("CREATE DATABASE IF NOT EXISTS %s;", MariaDBDatabase),
	}, "\n") + "\n"
	if err := os.WriteFile(m.initPath, []byte(init), 0o600); err != nil {
		return err
	}
	var err error
	m.cred, err = runAs("mariadbd", mariaOSUser, clusterDir, dir, m.initPath)
	return err
}

// install creates the system tables with mariadb-install-db: no test
// database, root reachable only through the socket by the OS user that
// runs the server, a small redo log.
func (m *MariaDB) install(ctx context.Context, bins binaries) error {
	ctx, cancel := context.WithTimeout(ctx, mariaInstallTimeout)
	defer cancel()
	cmd := exec.Command(bins.mariaInstall,
		"--no-defaults",
		"--datadir="+m.dataDir,
		"--auth-root-authentication-method=socket",
		"--skip-test-db",
		"--innodb-log-file-size="+mariaRedoLog,
	)
	cmd.Env = childEnv()
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: m.cred}
	cmd.Dir = filepath.Dir(m.dataDir)
	ip, err := launch(cmd, m.logPath, m.cl.logWriter("mariadb-install-db"))
	if err != nil {
		return fmt.Errorf("mariadb-install-db: %w", err)
	}
	select {
	case <-ip.done:
		if ip.err != nil {
			return fmt.Errorf("mariadb-install-db: %w", ip.err)
		}
		return nil
	case <-ctx.Done():
		_ = ip.kill()
		return fmt.Errorf("mariadb-install-db: %w", ctx.Err())
	}
}

// mariaRedoLog is InnoDB's redo log size: 8MB instead of the default
// 96MB, so that a start writes less and crash recovery after Kill reads
// less; locks write nothing to it.
const mariaRedoLog = "8M"

// command runs mariadbd in the foreground. Benchmark settings, as for
// PostgreSQL: no fsync of the redo log at each commit (a killed server
// keeps what the page cache has), no performance schema, no DNS lookups.
func (m *MariaDB) command(bins binaries) *exec.Cmd {
	host, port, _ := net.SplitHostPort(m.addr)
	cmd := exec.Command(bins.mariadbd,
		"--no-defaults",
		"--datadir="+m.dataDir,
		"--socket="+m.sockPath,
		"--pid-file="+filepath.Join(filepath.Dir(m.dataDir), "mariadb.pid"),
		"--port="+port,
		"--bind-address="+host,
		"--skip-networking=0",
		"--init-file="+m.initPath,
		"--innodb-log-file-size="+mariaRedoLog,
		"--innodb-buffer-pool-size=64M",
		"--innodb-flush-log-at-trx-commit=2",
		// Native AIO (io_uring or libaio) is refused in some containers.
		"--innodb-use-native-aio=0",
		"--performance-schema=OFF",
		"--skip-name-resolve",
		// Without --log-error (and with --no-defaults) the error log goes
		// to stderr, so into server.log.
		"--max-connections="+strconv.Itoa(mariaMaxConnections),
	)
	cmd.Dir = filepath.Dir(m.dataDir)
	cmd.Env = childEnv()
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: m.cred}
	return cmd
}

// pingMySQL connects with dsn and runs SELECT 1.
func pingMySQL(ctx context.Context, dsn string) error {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return err
	}
	cfg.Logger = nopMySQLLogger{}
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		return err
	}
	db := sql.OpenDB(conn)
	defer db.Close()
	var one int
	return db.QueryRowContext(ctx, "SELECT 1").Scan(&one)
}

// nopMySQLLogger silences go-sql-driver/mysql, which logs every failed
// read to stderr: a server that is starting or was killed is expected
// here.
type nopMySQLLogger struct{}

func (nopMySQLLogger) Print(...any) {}

// Kill SIGKILLs the server and waits until it is gone, as a crash would:
// every session ends, and with it every lock taken with GET_LOCK. Killing
// a server that is not running does nothing.
func (m *MariaDB) Kill() error { return m.kill() }

// Start starts the server again on the same port and data directory
// (InnoDB recovers first after Kill) and waits until the lockbench user
// can log in. Starting a running server does nothing; after Cluster.Stop
// it returns ErrStopped.
func (m *MariaDB) Start(ctx context.Context) error { return m.start(ctx) }
