package conformance

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9/logging"

	"github.com/lockbench/lockbench/servers"
	"github.com/lockbench/lockbench/strategies"
	_ "github.com/lockbench/lockbench/strategies/all"
)

// tlsPassword is the password of the servers TestTLS starts.
const tlsPassword = "conformance-tls-pw"

// RefuseLimit is how soon strategies.New must fail when the client does not
// trust the server's certificate or logs in with a wrong password: 5s.
const RefuseLimit = 5 * time.Second

// tlsStrategies are the strategies whose clients TLS and auth concern:
// every Redis, etcd and Postgres lock.
var tlsStrategies = []string{
	"setnx", "fencing", "redislock", "setnx-watchdog", "rueidislock", "redlock", "redsync",
	"etcd", "pg-advisory", "pg-onconflict",
}

// TestTLS runs the exclusion case of every Redis, etcd and Postgres
// strategy through servers that need TLS and a password (Redis TLS-only
// with an ACL user, etcd with client certificates and auth enabled,
// Postgres ssl=on with scram passwords), from a CA the test generates; and
// checks that a wrong CA or a wrong password fails strategies.New within
// RefuseLimit with one line that says what is wrong and shows no password.
func TestTLS(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real servers; run without -short")
	}
	logging.Disable() // go-redis would log the refused handshakes
	// Starting the servers has this deadline; each case has its own.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	certs, err := servers.GenerateCA(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	other, err := servers.GenerateCA(t.TempDir()) // a CA that signed nothing the servers use
	if err != nil {
		t.Fatal(err)
	}
	sec := &servers.Secure{Certs: certs, Password: tlsPassword}
	needs := servers.NeedsOf(lookupAll(t, tlsStrategies))
	cl, err := servers.Start(ctx, needs, servers.Options{Secure: sec})
	if err != nil {
		t.Fatalf("start servers: %v", err)
	}
	t.Cleanup(func() {
		if err := cl.Stop(); err != nil {
			t.Errorf("stop servers: %v", err)
		}
	})
	good := strategies.Config{
		RedisCACert:  certs.CA,
		EtcdCACert:   certs.CA,
		EtcdCert:     certs.ClientCert,
		EtcdKey:      certs.ClientKey,
		EtcdUser:     servers.DefaultSecureUser,
		EtcdPassword: tlsPassword,
		PostgresDSN:  cl.Postgres.DSN,
	}
	for _, r := range cl.Redis {
		good.RedisAddrs = append(good.RedisAddrs, r.URL())
	}
	for _, m := range cl.Etcd {
		good.EtcdEndpoints = append(good.EtcdEndpoints, m.ClientURL)
	}

	for _, info := range lookupAll(t, tlsStrategies) {
		t.Run(info.Name, func(t *testing.T) {
			h := &harness{info: info, target: servers.Target{Need: info.Need, Config: trim(good, info.Need)}}
			t.Run("exclusion-per-contender", func(t *testing.T) { testExclusion(Testing(t), h, true) })

			for _, tc := range []struct {
				name string
				cfg  strategies.Config
				// want is a word the error must hold.
				want string
				// only, when set, is the one backend the case is about.
				only strategies.Backend
			}{
				// A CA that did not sign the servers' certificates.
				{name: "wrong CA", cfg: withCA(good, other.CA), want: "certificate"},
				// The right CA and a wrong password.
				{name: "wrong password", cfg: withPassword(good, "not-"+tlsPassword), want: "pass"},
				// etcd members check client certificates: none given.
				{name: "no client certificate", cfg: withoutClientCert(good), want: "client certificate", only: strategies.BackendEtcd},
			} {
				if tc.only != "" && tc.only != info.Need.Backend {
					continue
				}
				t.Run(tc.name, func(t *testing.T) {
					if tc.name == "wrong CA" && info.Need.Backend == strategies.BackendPostgres {
						tc.want = "x509"
					}
					cfg := trim(tc.cfg, info.Need)
					cfg.TTL, cfg.Owner = LongTTL, "refused"
					checkRefused(t, info.Name, cfg, tc.want)
				})
			}
		})
	}
}

// checkRefused checks that strategies.New of name with cfg fails within
// RefuseLimit, counted from the case's own start, in one line that holds
// want (when set) and no password.
func checkRefused(t *testing.T, name string, cfg strategies.Config, want string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*RefuseLimit)
	defer cancel()
	start := time.Now()
	s, err := strategies.New(ctx, name, cfg)
	took := time.Since(start)
	if err == nil {
		_ = s.Close()
		t.Fatalf("strategies.New: got a strategy; want an error")
	}
	msg := err.Error()
	t.Logf("in %v: %s", took.Round(time.Millisecond), msg)
	if took > RefuseLimit {
		t.Errorf("strategies.New took %v; want an error within %v", took, RefuseLimit)
	}
	if strings.Contains(msg, "\n") {
		t.Errorf("error has %d lines; want one", strings.Count(msg, "\n")+1)
	}
	if !strings.Contains(strings.ToLower(msg), want) {
		t.Errorf("error %q; want it to say %q", msg, want)
	}
	if strings.Contains(msg, tlsPassword) {
		t.Errorf("error %q shows the password", msg)
	}
}

// lookupAll returns the registry entries of names.
func lookupAll(t *testing.T, names []string) []strategies.Info {
	t.Helper()
	var infos []strategies.Info
	for _, name := range names {
		info, ok := strategies.Lookup(name)
		if !ok {
			t.Fatalf("strategy %q: not registered", name)
		}
		infos = append(infos, info)
	}
	return infos
}

// trim is c with as many Redis entries as need names (one for a
// single-node lock).
func trim(c strategies.Config, need strategies.Need) strategies.Config {
	if n := max(need.Nodes, 1); len(c.RedisAddrs) > n {
		c.RedisAddrs = c.RedisAddrs[:n]
	}
	return c
}

// withCA is c with every server verified by the CA in file caFile.
func withCA(c strategies.Config, caFile string) strategies.Config {
	c.RedisCACert, c.EtcdCACert = caFile, caFile
	c.PostgresDSN = setQuery(c.PostgresDSN, "sslrootcert", caFile)
	return c
}

// withoutClientCert is c without the etcd client certificate.
func withoutClientCert(c strategies.Config) strategies.Config {
	c.EtcdCert, c.EtcdKey = "", ""
	return c
}

// withPassword is c with every password set to pw.
func withPassword(c strategies.Config, pw string) strategies.Config {
	addrs := make([]string, len(c.RedisAddrs))
	for i, a := range c.RedisAddrs {
		addrs[i] = setPassword(a, pw)
	}
	c.RedisAddrs = addrs
	c.EtcdPassword = pw
	c.PostgresDSN = setPassword(c.PostgresDSN, pw)
	return c
}

func setPassword(rawURL, pw string) string {
	u, err := url.Parse(rawURL)
	if err != nil || u.User == nil {
		return rawURL
	}
	u.User = url.UserPassword(u.User.Username(), pw)
	return u.String()
}

func setQuery(rawURL, key, value string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return rawURL
	}
	q := u.Query()
	q.Set(key, value)
	u.RawQuery = q.Encode()
	return u.String()
}

// TestTLSSentinel runs the exclusion case of the single-node Redis
// strategies through a replicated Redis whose data nodes and Sentinels all
// need TLS and the ACL user: the Sentinels' entries are rediss:// URLs with
// the user, the primary's login is in a URL-form master name. A wrong
// Sentinel password fails strategies.New within RefuseLimit, in one line.
func TestTLSSentinel(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real servers; run without -short")
	}
	logging.Disable()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	certs, err := servers.GenerateCA(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	sec := &servers.Secure{Certs: certs, Password: tlsPassword}
	cl, err := servers.Start(ctx, servers.Needs{Redis: 1}, servers.Options{RedisTopology: servers.TopologySentinel, Secure: sec})
	if err != nil {
		t.Fatalf("start servers: %v", err)
	}
	t.Cleanup(func() {
		if err := cl.Stop(); err != nil {
			t.Errorf("stop servers: %v", err)
		}
	})
	master := url.URL{Scheme: "rediss", User: url.UserPassword(servers.DefaultSecureUser, tlsPassword), Host: strategies.DefaultRedisMaster}
	good := strategies.Config{RedisCACert: certs.CA, RedisMaster: master.String()}
	for _, s := range cl.Sentinels {
		good.RedisSentinels = append(good.RedisSentinels, s.URL())
	}
	wrong := good
	wrong.RedisSentinels = nil
	for _, s := range good.RedisSentinels {
		wrong.RedisSentinels = append(wrong.RedisSentinels, setPassword(s, "not-"+tlsPassword))
	}
	for _, info := range lookupAll(t, []string{"setnx", "fencing", "redislock", "setnx-watchdog", "rueidislock"}) {
		t.Run(info.Name, func(t *testing.T) {
			h := &harness{info: info, target: servers.Target{Need: info.Need, Config: good}}
			t.Run("exclusion-per-contender", func(t *testing.T) { testExclusion(Testing(t), h, true) })
			t.Run("wrong Sentinel password", func(t *testing.T) {
				cfg := wrong
				cfg.TTL, cfg.Owner = LongTTL, "refused"
				checkRefused(t, info.Name, cfg, "")
			})
		})
	}
}
