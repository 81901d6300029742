package servers

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// binaries are the programs and libraries Start runs.
type binaries struct {
	redisServer  string // redis-server
	faketime     string // libfaketime.so.1
	mallocDebug  string // libc_malloc_debug.so.0, preloaded before libfaketime
	pgBin        string // directory holding initdb and postgres
	self         string // a lockbench binary, run as an etcd member
	java         string // the JVM that runs ZooKeeper
	zkClasspath  string // ZooKeeper's jar and an SLF4J binding
	mariadbd     string // the MariaDB server
	mariaInstall string // mariadb-install-db
}

// aptPackage is one Debian package lockbench may install, at most once per
// process.
type aptPackage struct {
	name string
	once sync.Once
	err  error
}

var (
	// redis-server also runs the Sentinels of the sentinel topology
	// (redis-server sentinel.conf --sentinel): Debian's redis-sentinel
	// package only adds a service and a redis-sentinel link to the same
	// binary, so it is not needed.
	aptRedis    = &aptPackage{name: "redis-server"}
	aptPostgres = &aptPackage{name: "postgresql-15"}
	aptFaketime = &aptPackage{name: "faketime"}
	// Debian's zookeeper (3.8) brings a JRE and the jars; it starts no
	// service (zookeeperd would).
	aptZooKeeper = &aptPackage{name: "zookeeper"}
	// Debian's mariadb-server brings mariadbd and mariadb-install-db; its
	// packaged service is not used (lockbench starts its own server).
	aptMariaDB = &aptPackage{name: "mariadb-server"}

	aptMu         sync.Mutex // one apt-get at a time: dpkg has one lock
	aptUpdateOnce sync.Once
	aptUpdateErr  error

	// installLog receives the one line said before installing.
	installLog io.Writer = os.Stderr
)

// findBinaries finds (installing if it may) what needs and opts call for.
func findBinaries(ctx context.Context, needs Needs, opts Options) (binaries, error) {
	var b binaries
	var err error
	if needs.Redis > 0 {
		b.redisServer, err = ensure(ctx, aptRedis, "redis-server", EnvRedisAddrs, findRedisServer)
		if err != nil {
			return b, err
		}
		if opts.Faketime {
			b.faketime, err = ensure(ctx, aptFaketime, "libfaketime", "", findFaketime)
			if err != nil {
				return b, err
			}
			b.mallocDebug = findFirst(libDirs("libc_malloc_debug.so.0"))
			if b.mallocDebug == "" {
				return b, fmt.Errorf("%w: libc_malloc_debug.so.0 (part of glibc 2.34 and later, package libc6), needed to run redis-server under libfaketime", ErrNotInstalled)
			}
		}
	}
	if needs.Postgres {
		b.pgBin, err = ensure(ctx, aptPostgres, "PostgreSQL (initdb and postgres)", EnvPostgresDSN, findPostgres)
		if err != nil {
			return b, err
		}
	}
	if needs.Etcd {
		if b.self, err = etcdLauncher(ctx); err != nil {
			return b, err
		}
	}
	if needs.ZooKeeper {
		b.zkClasspath, err = ensure(ctx, aptZooKeeper, "ZooKeeper (java and /usr/share/java/zookeeper.jar)", EnvZKServers, findZooKeeper)
		if err != nil {
			return b, err
		}
		b.java = findJava()
	}
	if needs.MySQL {
		b.mariadbd, err = ensure(ctx, aptMariaDB, "MariaDB (mariadbd and mariadb-install-db)", EnvMySQLDSN, findMariaDB)
		if err != nil {
			return b, err
		}
		b.mariaInstall = findMariaInstall()
	}
	return b, nil
}

// ensure returns find's result, installing pkg first when find finds nothing
// and we run as root on a system with apt-get. what names the missing thing
// and env the variable that avoids needing it, for the error.
func ensure(ctx context.Context, pkg *aptPackage, what, env string, find func() string) (string, error) {
	if p := find(); p != "" {
		return p, nil
	}
	if !canApt() {
		msg := fmt.Sprintf("%s not found; install the Debian package %s (apt-get install -y %s) or its equivalent",
			what, pkg.name, pkg.name)
		if env != "" {
			msg += ", or set " + env + " to use a server you run"
		}
		return "", fmt.Errorf("%w: %s", ErrNotInstalled, msg)
	}
	pkg.once.Do(func() { pkg.err = aptInstall(ctx, pkg.name, what) })
	if pkg.err != nil {
		return "", fmt.Errorf("%w: %s not found and apt-get install -y %s failed: %v", ErrNotInstalled, what, pkg.name, pkg.err)
	}
	if p := find(); p != "" {
		return p, nil
	}
	return "", fmt.Errorf("%w: %s still not found after apt-get install -y %s", ErrNotInstalled, what, pkg.name)
}

// canApt reports whether we may install packages ourselves: as root, on a
// system with apt-get. A variable so that tests can say no.
var canApt = func() bool {
	if os.Geteuid() != 0 {
		return false
	}
	_, err := exec.LookPath("apt-get")
	return err == nil
}

// aptInstall installs name, running apt-get update (once per process) and
// trying again if the first attempt fails (stale or missing package lists).
func aptInstall(ctx context.Context, name, what string) error {
	aptMu.Lock()
	defer aptMu.Unlock()
	fmt.Fprintf(installLog, "lockbench: %s not found, installing it: apt-get install -y %s\n", what, name)
	err := aptGet(ctx, "install", "-y", "--no-install-recommends", name)
	if err == nil {
		return nil
	}
	aptUpdateOnce.Do(func() { aptUpdateErr = aptGet(ctx, "update") })
	if aptUpdateErr != nil {
		return errors.Join(err, aptUpdateErr)
	}
	return aptGet(ctx, "install", "-y", "--no-install-recommends", name)
}

func aptGet(ctx context.Context, args ...string) error {
	cmd := exec.CommandContext(ctx, "apt-get", args...)
	cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("apt-get %s: %w: %s", strings.Join(args, " "), err, lastLines(string(out), 5))
	}
	return nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(len(lines)-n, 0):], "\n")
}

func findRedisServer() string {
	if p, err := exec.LookPath("redis-server"); err == nil {
		return p
	}
	return findFirst([]string{"/usr/bin/redis-server", "/usr/local/bin/redis-server", "/usr/sbin/redis-server"})
}

// findPostgres returns a directory holding both initdb and postgres: the
// newest Debian /usr/lib/postgresql/N/bin, else the one of initdb on PATH.
func findPostgres() string {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	version := func(dir string) int {
		v, _ := strconv.Atoi(filepath.Base(filepath.Dir(dir)))
		return v
	}
	slices.SortFunc(dirs, func(a, b string) int { return version(b) - version(a) })
	if p, err := exec.LookPath("initdb"); err == nil {
		if p, err = filepath.EvalSymlinks(p); err == nil {
			dirs = append(dirs, filepath.Dir(p))
		}
	}
	for _, d := range dirs {
		if isExec(filepath.Join(d, "initdb")) && isExec(filepath.Join(d, "postgres")) {
			return d
		}
	}
	return ""
}

// findZooKeeper returns the class path that runs Debian's ZooKeeper server:
// its jar (whose manifest names the jars it depends on) and, when present,
// SLF4J's simple binding, which makes it log to stderr (without a binding it
// logs nothing). It returns "" when the jar or java is missing.
func findZooKeeper() string {
	jar := findFirst([]string{"/usr/share/java/zookeeper.jar"})
	if jar == "" || findJava() == "" {
		return ""
	}
	if binding := findFirst([]string{"/usr/share/java/slf4j-simple.jar"}); binding != "" {
		return jar + ":" + binding
	}
	return jar
}

// findMariaDB returns the MariaDB server binary, or "" when it or
// mariadb-install-db is missing.
func findMariaDB() string {
	if findMariaInstall() == "" {
		return ""
	}
	if p, err := exec.LookPath("mariadbd"); err == nil {
		return p
	}
	return findFirst([]string{"/usr/sbin/mariadbd", "/usr/bin/mariadbd", "/usr/local/sbin/mariadbd"})
}

func findMariaInstall() string {
	if p, err := exec.LookPath("mariadb-install-db"); err == nil {
		return p
	}
	return findFirst([]string{"/usr/bin/mariadb-install-db", "/usr/local/bin/mariadb-install-db"})
}

func findJava() string {
	if p, err := exec.LookPath("java"); err == nil {
		return p
	}
	return findFirst([]string{"/usr/bin/java"})
}

func findFaketime() string {
	return findFirst(libDirs("faketime/libfaketime.so.1"))
}

// libDirs lists where Debian and others put a shared library.
func libDirs(rel string) []string {
	var out []string
	for _, pattern := range []string{"/usr/lib/*/", "/lib/*/", "/usr/lib64/", "/usr/lib/", "/lib64/", "/usr/local/lib/"} {
		m, _ := filepath.Glob(pattern + rel)
		out = append(out, m...)
	}
	return out
}

func findFirst(paths []string) string {
	for _, p := range paths {
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p
		}
	}
	return ""
}

func isExec(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir() && st.Mode()&0o111 != 0
}
