package servers

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/lockbench/lockbench/strategies"
)

// openMySQL returns a database handle on dsn, closed when t ends.
func openMySQL(t *testing.T, dsn string) *sql.DB {
	t.Helper()
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		t.Fatalf("ParseDSN: %v", err)
	}
	cfg.Logger = nopMySQLLogger{}
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		t.Fatalf("NewConnector: %v", err)
	}
	db := sql.OpenDB(conn)
	t.Cleanup(func() { db.Close() })
	return db
}

// TestMariaDB starts a MariaDB server and checks what lockbench relies on:
// the lockbench user logs in with the generated password over TCP, and
// GET_LOCK works; a wrong password is refused; Kill ends every session
// (and its locks) and Start brings the server back at the same DSN; Stop
// leaves no mariadbd and no directory behind.
func TestMariaDB(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real server; run without -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := Start(ctx, Needs{MySQL: true}, Options{})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			c.Stop()
		}
	})
	m := c.MariaDB
	if m == nil {
		t.Fatal("Cluster.MariaDB is nil after Start with Needs.MySQL")
	}
	if got := c.Endpoints().MySQLDSN; got != m.DSN || got == "" {
		t.Errorf("Endpoints().MySQLDSN = %q; want the server's DSN %q", got, m.DSN)
	}
	cfg, err := mysql.ParseDSN(m.DSN)
	if err != nil {
		t.Fatalf("ParseDSN(%q): %v", Redact(m.DSN), err)
	}
	if cfg.User != MariaDBUser || len(cfg.Passwd) != 32 || cfg.Net != "tcp" || !strings.HasPrefix(cfg.Addr, "127.0.0.1:") || cfg.DBName != MariaDBDatabase {
		t.Errorf("DSN %q: want %s with a 32-hex-digit password at tcp(127.0.0.1:port)/%s", Redact(m.DSN), MariaDBUser, MariaDBDatabase)
	}
	db := openMySQL(t, m.DSN)
	var got sql.NullInt64
	if err := db.QueryRowContext(ctx, "SELECT GET_LOCK('servers-test', 0)").Scan(&got); err != nil || got.Int64 != 1 {
		t.Fatalf("GET_LOCK: %v, %v; want 1", got, err)
	}

	// A wrong password is refused: the user has one.
	bad := *cfg
	bad.Passwd = "wrong"
	if err := openMySQL(t, bad.FormatDSN()).PingContext(ctx); err == nil {
		t.Error("ping with a wrong password: got nil error; want access denied")
	}

	// Kill: the server is gone, and its sessions with it.
	pid := m.pid()
	if err := m.Kill(); err != nil {
		t.Fatalf("Kill: %v", err)
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("mariadbd %d still there after Kill (kill -0: %v)", pid, err)
	}
	pctx, pcancel := context.WithTimeout(ctx, 3*time.Second)
	err = db.PingContext(pctx)
	pcancel()
	if err == nil {
		t.Error("ping after Kill: got nil error")
	}
	if err := m.Start(ctx); err != nil {
		t.Fatalf("Start after Kill: %v", err)
	}
	if err := db.QueryRowContext(ctx, "SELECT GET_LOCK('servers-test', 0)").Scan(&got); err != nil || got.Int64 != 1 {
		t.Errorf("GET_LOCK after the restart (the old session's lock gone with it): %v, %v; want 1", got, err)
	}
	if v := c.Versions(ctx)["mariadb"]; !strings.HasPrefix(v, "10.") && !strings.HasPrefix(v, "11.") {
		t.Errorf(`Versions()["mariadb"] = %q; want 10.x or 11.x`, v)
	}

	pid = m.pid()
	dir := c.dir
	if err := c.Stop(); err != nil {
		t.Errorf("Stop: %v", err)
	}
	stopped = true
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("mariadbd %d still there after Stop (kill -0: %v)", pid, err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("temporary directory %s after Stop: %v; want removed", dir, err)
	}
	if err := m.Start(ctx); !errors.Is(err, ErrStopped) {
		t.Errorf("Start after Stop: got %v; want ErrStopped", err)
	}
}

// TestMySQLDSNs checks the MySQL backend's DSN handling: the host:port a
// partition's proxy takes the place of, the DSN pointed at the proxy
// (user, password, database and parameters kept), errors that never quote
// the DSN, and its password redacted.
func TestMySQLDSNs(t *testing.T) {
	const dsn = "u:s3cr@t@tcp(db.example:3306)/bank?timeout=2s"
	b := backends[strategies.BackendMySQL]
	if got, err := b.hostPort(dsn); err != nil || got != "db.example:3306" {
		t.Errorf("hostPort = %q, %v; want db.example:3306", got, err)
	}
	routed, err := b.withHostPort(dsn, "127.0.0.1:4000")
	if err != nil {
		t.Fatalf("withHostPort: %v", err)
	}
	cfg, err := mysql.ParseDSN(routed)
	if err != nil {
		t.Fatalf("ParseDSN(routed): %v", err)
	}
	if cfg.Addr != "127.0.0.1:4000" || cfg.User != "u" || cfg.Passwd != "s3cr@t" || cfg.DBName != "bank" || cfg.Timeout != 2*time.Second {
		t.Errorf("routed DSN %q: got %s@%s/%s timeout %v; want u with its password at 127.0.0.1:4000/bank, timeout 2s", Redact(routed), cfg.User, cfg.Addr, cfg.DBName, cfg.Timeout)
	}
	for _, bad := range []string{
		"u:s3cr@t@unix(/run/mysqld.sock)/bank", // not TCP
		"u:s3cr@t@tcp(db.example:3306)bank",    // no slash before the database
	} {
		_, err := b.hostPort(bad)
		if err == nil {
			t.Errorf("hostPort(%q): got nil error", bad)
		} else if strings.Contains(err.Error(), "s3cr") {
			t.Errorf("hostPort error quotes the password: %v", err)
		}
	}
	for _, tc := range []struct{ in, want string }{
		// The DSN alone, as a flag's value or the environment has it.
		{dsn, "u:xxxxx@tcp(db.example:3306)/bank?timeout=2s"},
		// `lockbench up`'s line.
		{"export LOCKBENCH_MYSQL_DSN='lockbench:0123abcd@tcp(127.0.0.1:3306)/lockbench'",
			"export LOCKBENCH_MYSQL_DSN='lockbench:xxxxx@tcp(127.0.0.1:3306)/lockbench'"},
		// No password: nothing to hide.
		{"root@tcp(127.0.0.1:3306)/", "root@tcp(127.0.0.1:3306)/"},
		// Inside an error message.
		{"open u:pw@tcp(h:1)/d: refused", "open u:xxxxx@tcp(h:1)/d: refused"},
	} {
		if got := Redact(tc.in); got != tc.want {
			t.Errorf("Redact(%q) = %q; want %q", tc.in, got, tc.want)
		}
	}
}

// TestMySQLEndpointsEnv checks that LOCKBENCH_MYSQL_DSN is read and
// printed back, and that a target of the MySQL backend gets the DSN.
func TestMySQLEndpointsEnv(t *testing.T) {
	const dsn = "lockbench:pw@tcp(127.0.0.1:3306)/lockbench"
	t.Setenv(EnvMySQLDSN, " "+dsn+" ")
	ep := EndpointsFromEnv()
	if ep.MySQLDSN != dsn {
		t.Errorf("EndpointsFromEnv().MySQLDSN = %q; want %q", ep.MySQLDSN, dsn)
	}
	found := false
	for _, line := range ep.Env() {
		found = found || line == EnvMySQLDSN+"="+dsn
	}
	if !found {
		t.Errorf("Env() = %q; want a line %s=%s", ep.Env(), EnvMySQLDSN, dsn)
	}
	tg, err := TargetFor(strategies.Need{Backend: strategies.BackendMySQL, Nodes: 1}, ep, nil)
	if err != nil {
		t.Fatalf("TargetFor: %v", err)
	}
	if tg.Config.MySQLDSN != dsn || tg.Local() || tg.Len() != 1 || tg.Given() != "--mysql-dsn or "+EnvMySQLDSN {
		t.Errorf("target: DSN %q, local %v, len %d, given %q; want the DSN, not local, 1 node, --mysql-dsn or %s",
			tg.Config.MySQLDSN, tg.Local(), tg.Len(), tg.Given(), EnvMySQLDSN)
	}
	var n Needs
	n.Add(strategies.Need{Backend: strategies.BackendMySQL, Nodes: 1})
	if !n.MySQL {
		t.Error("Needs.Add(mysql): MySQL not set")
	}
}
