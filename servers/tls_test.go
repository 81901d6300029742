package servers

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/logging"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// TestRedactSecrets covers the forms TLS and auth add: rediss:// entries,
// etcd passwords and DSN passwords in key=value and URL forms.
func TestRedactSecrets(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		// A rediss:// entry with an ACL user, alone and in a list.
		{"rediss acl", "rediss://app:pw@10.0.0.1:6380", "rediss://app:xxxxx@10.0.0.1:6380"},
		{"rediss list", "rediss://a:pw@h:1,rediss://b:pw2@h:2", "rediss://a:xxxxx@h:1,rediss://b:xxxxx@h:2"},
		// A raw '@' in a password: URL parsers split at the last '@'.
		{"raw @ in password", "redis://u:p@ss@h:6379", "redis://u:xxxxx@h:6379"},
		// A Sentinel master given as a URL.
		{"master url", "LOCKBENCH_REDIS_MASTER=rediss://app:pw@mymaster", "LOCKBENCH_REDIS_MASTER=rediss://app:xxxxx@mymaster"},
		// The etcd password, as Env prints it and as %+v prints a config.
		{"etcd env line", "LOCKBENCH_ETCD_PASSWORD=pw", "LOCKBENCH_ETCD_PASSWORD=xxxxx"},
		{"etcd %+v", "{EtcdUser:root EtcdPassword:pw PostgresDSN:}", "{EtcdUser:root EtcdPassword:xxxxx PostgresDSN:}"},
		// JSON and YAML fields.
		{"json", `{"password": "p w", "user": "u"}`, `{"password": xxxxx, "user": "u"}`},
		{"yaml", "etcd_password: pw", "etcd_password: xxxxx"},
		// DSN forms with TLS settings around the password.
		{"dsn keyword", "host=db user=app password=pw sslmode=verify-full sslrootcert=/ca.pem", "host=db user=app password=xxxxx sslmode=verify-full sslrootcert=/ca.pem"},
		{"dsn url", "postgres://app:pw@db:5432/bank?sslmode=verify-full&sslrootcert=%2Fca.pem", "postgres://app:xxxxx@db:5432/bank?sslmode=verify-full&sslrootcert=%2Fca.pem"},
		// Nothing to hide: a Redis refusal names no password.
		{"wrongpass", "WRONGPASS invalid username-password pair or user is disabled.", "WRONGPASS invalid username-password pair or user is disabled."},
		{"https endpoint", "https://127.0.0.1:2379", "https://127.0.0.1:2379"},
		{"ca path", "LOCKBENCH_ETCD_CACERT=/etc/ssl/ca.pem", "LOCKBENCH_ETCD_CACERT=/etc/ssl/ca.pem"},
	} {
		if got := Redact(tc.in); got != tc.want {
			t.Errorf("%s: Redact(%q) = %q; want %q", tc.name, tc.in, got, tc.want)
		}
	}
}

// TestEndpointsEnvTLS checks that the TLS and auth variables read back
// through Env and EndpointsFromEnv, and reach a target's lock config.
func TestEndpointsEnvTLS(t *testing.T) {
	want := Endpoints{
		RedisAddrs:    []string{"rediss://app:pw@127.0.0.1:6380"},
		RedisCACert:   "/ca.pem",
		EtcdEndpoints: []string{"https://127.0.0.1:2379"},
		EtcdCACert:    "/ca.pem",
		EtcdCert:      "/client.pem",
		EtcdKey:       "/client-key.pem",
		EtcdUser:      "root",
		EtcdPassword:  "pw",
	}
	for _, line := range want.Env() {
		k, v, _ := strings.Cut(line, "=")
		t.Setenv(k, v)
	}
	got := EndpointsFromEnv()
	if g, w := strings.Join(got.Env(), "\n"), strings.Join(want.Env(), "\n"); g != w {
		t.Errorf("EndpointsFromEnv().Env() = %q; want %q", g, w)
	}
	c := got.withCredentials(got.credentials())
	if c.RedisCACert != want.RedisCACert || c.EtcdCACert != want.EtcdCACert || c.EtcdCert != want.EtcdCert ||
		c.EtcdKey != want.EtcdKey || c.EtcdUser != want.EtcdUser || c.EtcdPassword != want.EtcdPassword {
		t.Errorf("credentials() = %+v; want the TLS and auth fields of %+v", c, want)
	}
}

// TestSecure starts Redis, etcd and Postgres with TLS and a password from a
// CA the test generates, and checks that each serves a client that trusts
// the CA and logs in, and refuses one that does not log in.
func TestSecure(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real servers; run without -short")
	}
	logging.Disable()
	certs, err := GenerateCA(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	sec := &Secure{Certs: certs, Password: "tls-test-pw"}
	c := start(t, Needs{Redis: 1, Etcd: true, Postgres: true}, Options{Secure: sec})
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	tc, err := sec.clientTLS()
	if err != nil {
		t.Fatal(err)
	}

	t.Run("redis", func(t *testing.T) {
		if got := c.Redis[0].URL(); !strings.HasPrefix(got, "rediss://"+DefaultSecureUser+":") {
			t.Errorf("URL() = %q; want rediss://%s:…@…", Redact(got), DefaultSecureUser)
		}
		for _, tt := range []struct {
			name       string
			user, pw   string
			tls        bool
			wantRefuse bool
		}{
			// The ACL user over TLS is served.
			{"acl user over TLS", DefaultSecureUser, sec.Password, true, false},
			// A wrong password is refused.
			{"wrong password", DefaultSecureUser, "nope", true, true},
			// The default user is disabled.
			{"no login", "", "", true, true},
			// The plain protocol gets nothing: the port speaks TLS only.
			{"plain", DefaultSecureUser, sec.Password, false, true},
		} {
			o := &redis.Options{Addr: c.Redis[0].Addr, Username: tt.user, Password: tt.pw, MaxRetries: -1, DialTimeout: time.Second, ReadTimeout: time.Second}
			if tt.tls {
				o.TLSConfig = tc
			}
			rc := redis.NewClient(o)
			err := rc.Ping(ctx).Err()
			_ = rc.Close()
			if (err != nil) != tt.wantRefuse {
				t.Errorf("%s: PING: got %v; want refused %v", tt.name, err, tt.wantRefuse)
			}
		}
	})

	t.Run("etcd", func(t *testing.T) {
		ep := c.Etcd[0].ClientURL
		if !strings.HasPrefix(ep, "https://") {
			t.Fatalf("ClientURL = %q; want https://", ep)
		}
		for _, tt := range []struct {
			name       string
			user, pw   string
			wantRefuse bool
		}{
			// The user with its password is served.
			{"user", DefaultSecureUser, sec.Password, false},
			// A wrong password is refused.
			{"wrong password", DefaultSecureUser, "nope", true},
		} {
			ec, err := clientv3.New(clientv3.Config{Endpoints: []string{ep}, TLS: tc, Username: tt.user, Password: tt.pw, DialTimeout: 3 * time.Second, Logger: zap.NewNop()})
			if err == nil {
				_, err = ec.Put(ctx, "tls-test", "x")
				_ = ec.Close()
			}
			if (err != nil) != tt.wantRefuse {
				t.Errorf("%s: put: got %v; want refused %v", tt.name, err, tt.wantRefuse)
			}
		}
	})

	t.Run("postgres", func(t *testing.T) {
		dsn := c.Postgres.DSN
		for _, want := range []string{"sslmode=verify-full", "sslrootcert="} {
			if !strings.Contains(dsn, want) {
				t.Errorf("DSN %q: want %s", Redact(dsn), want)
			}
		}
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Fatalf("connect with the DSN: %v", err)
		}
		var ssl bool
		err = conn.QueryRow(ctx, "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()").Scan(&ssl)
		_ = conn.Close(ctx)
		if err != nil || !ssl {
			t.Errorf("pg_stat_ssl: got ssl=%v, %v; want true", ssl, err)
		}
		wrong := strings.Replace(dsn, sec.Password, "nope", 1)
		if conn, err := pgx.Connect(ctx, wrong); err == nil {
			_ = conn.Close(ctx)
			t.Errorf("connect with a wrong password: got a connection; want refused")
		}
	})
}

// TestRedisEntryHostPort checks the address a Redis entry dials and the
// entry pointed elsewhere (a partition's proxy): a URL keeps its scheme
// and login, and errors never show a password.
func TestRedisEntryHostPort(t *testing.T) {
	for _, tc := range []struct {
		name, ep, wantHost, wantRouted string
	}{
		// host:port is its own address and is replaced whole.
		{"host:port", "10.0.0.1:6379", "10.0.0.1:6379", "127.0.0.1:9"},
		// A URL keeps TLS and its login.
		{"rediss", "rediss://app:pw@10.0.0.1:6380", "10.0.0.1:6380", "rediss://app:pw@127.0.0.1:9"},
	} {
		host, err := redisHostPort(tc.ep)
		if err != nil || host != tc.wantHost {
			t.Errorf("%s: redisHostPort = %q, %v; want %q", tc.name, host, err, tc.wantHost)
		}
		routed, err := redisWithHostPort(tc.ep, "127.0.0.1:9")
		if err != nil || routed != tc.wantRouted {
			t.Errorf("%s: redisWithHostPort = %q, %v; want %q", tc.name, Redact(routed), err, Redact(tc.wantRouted))
		}
	}
	if _, err := redisHostPort("rediss://app:s3cret@nohost"); err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("redisHostPort of a URL without a port: got %v; want an error without the password", err)
	}
}
