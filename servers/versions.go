package servers

import (
	"context"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	etcdversion "go.etcd.io/etcd/api/v3/version"
)

// versionTimeout bounds each server's version query.
const versionTimeout = 3 * time.Second

var (
	reRedisVersion    = regexp.MustCompile(`v=(\S+)`)
	rePostgresVersion = regexp.MustCompile(`\(PostgreSQL\) (\S+)`)
	reZKVersion       = regexp.MustCompile(`(?m)^Zookeeper version: ([^-,\s]+)`)
	reMariaDBVersion  = regexp.MustCompile(`Ver (\d[^-\s]*)-MariaDB`)
)

// Versions returns the versions of the servers c started, by kind
// ("redis", "postgres", "etcd", "zookeeper", "mariadb"), for a run directory's
// meta.json: the binaries' own answer (redis-server --version, postgres
// --version, mariadbd --version), ZooKeeper's srvr word, and etcd's version compiled into the
// lockbench binary its members run from. A version it cannot find is left
// out; a nil Cluster has none.
func (c *Cluster) Versions(ctx context.Context) map[string]string {
	out := map[string]string{}
	if c == nil {
		return out
	}
	ask := func(kind, bin string, re *regexp.Regexp, args ...string) {
		if bin == "" {
			return
		}
		ctx, cancel := context.WithTimeout(ctx, versionTimeout)
		defer cancel()
		b, err := exec.CommandContext(ctx, bin, args...).Output()
		if err != nil {
			return
		}
		if m := re.FindSubmatch(b); m != nil {
			out[kind] = string(m[1])
		}
	}
	if len(c.Redis) > 0 {
		ask("redis", findRedisServer(), reRedisVersion, "--version")
	}
	if c.Postgres != nil {
		if dir := findPostgres(); dir != "" {
			ask("postgres", filepath.Join(dir, "postgres"), rePostgresVersion, "--version")
		}
	}
	if c.MariaDB != nil {
		ask("mariadb", findMariaDB(), reMariaDBVersion, "--version")
	}
	if len(c.Etcd) > 0 {
		out["etcd"] = etcdversion.Version + " (embedded)"
	}
	if len(c.ZooKeeper) > 0 {
		ctx, cancel := context.WithTimeout(ctx, versionTimeout)
		defer cancel()
		if ans, err := zkFourLetter(ctx, c.ZooKeeper[0].Addr, "srvr"); err == nil {
			if m := reZKVersion.FindStringSubmatch(ans); m != nil {
				out["zookeeper"] = strings.TrimSpace(m[1])
			}
		}
	}
	return out
}
