package cli

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9/logging"

	"github.com/lockbench/lockbench/servers"
)

// secretsLimit bounds a run refused for a wrong password: 20s, most of it
// the run's own set-up.
const secretsLimit = 20 * time.Second

// TestSecretsNeverShown runs `lockbench run` against Redis, etcd and
// Postgres that need TLS and a password (planted, and unique to the test),
// named the way a user names their own clusters (a rediss:// entry and the
// DSN with sslmode=verify-full on the command line, which meta.json
// records; the CA files and the etcd user and password in LOCKBENCH_*
// variables), and greps stdout, stderr and every file of the run directory
// for the password. A run with a wrong password must fail within
// secretsLimit with one line that shows neither password, and so must a
// bad list of entries.
func TestSecretsNeverShown(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real servers; run without -short")
	}
	logging.Disable()
	planted := fmt.Sprintf("planted-pw-%d", time.Now().UnixNano())
	certs, err := servers.GenerateCA(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cl, err := servers.Start(ctx, servers.Needs{Redis: 1, Etcd: true, Postgres: true},
		servers.Options{Secure: &servers.Secure{Certs: certs, Password: planted}})
	if err != nil {
		t.Fatalf("start servers: %v", err)
	}
	t.Cleanup(func() { _ = cl.Stop() })
	env := map[string]string{
		servers.EnvRedisAddrs:    cl.Redis[0].URL(),
		servers.EnvRedisCACert:   certs.CA,
		servers.EnvEtcdEndpoints: cl.Etcd[0].ClientURL,
		servers.EnvEtcdCACert:    certs.CA,
		servers.EnvEtcdCert:      certs.ClientCert,
		servers.EnvEtcdKey:       certs.ClientKey,
		servers.EnvEtcdUser:      servers.DefaultSecureUser,
		servers.EnvEtcdPassword:  planted,
		servers.EnvPostgresDSN:   cl.Postgres.DSN,
	}
	for k, v := range env {
		t.Setenv(k, v)
	}

	t.Run("run", func(t *testing.T) {
		dir := t.TempDir()
		var out, errb bytes.Buffer
		args := []string{"run", "--strategy", "setnx,etcd,pg-advisory", "--store", "postgres", "--payments", "200", "--out", dir,
			"--redis-addrs", cl.Redis[0].URL(), "--pg-dsn", cl.Postgres.DSN}
		err := Run(ctx, args, &out, &errb)
		noSecret(t, planted, "stdout", out.Bytes())
		noSecret(t, planted, "stderr", errb.Bytes())
		if err != nil {
			noSecret(t, planted, "error", []byte(err.Error()))
			t.Fatalf("%s: got %v; want a run\n%s", strings.Join(args, " "), servers.Redact(err.Error()), servers.Redact(errb.String()))
		}
		files := 0
		err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			files++
			rel, _ := filepath.Rel(dir, path)
			noSecret(t, planted, rel, b)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if files < 3 {
			t.Errorf("run directory has %d files; want the runs' data (summary.json, meta.json, reports, logs)", files)
		}
	})

	t.Run("wrong password", func(t *testing.T) {
		u, err := url.Parse(cl.Redis[0].URL())
		if err != nil {
			t.Fatal(err)
		}
		u.User = url.UserPassword(u.User.Username(), "wrong-"+planted)
		t.Setenv(servers.EnvRedisAddrs, u.String())
		var out, errb bytes.Buffer
		start := time.Now()
		err = Run(ctx, []string{"run", "--strategy", "setnx", "--payments", "200", "--out", t.TempDir()}, &out, &errb)
		took := time.Since(start)
		if err == nil {
			t.Fatal("run with a wrong Redis password: got no error; want one")
		}
		msg := err.Error()
		t.Logf("in %v: %s", took.Round(time.Millisecond), msg)
		if took > secretsLimit {
			t.Errorf("refused after %v; want within %v", took, secretsLimit)
		}
		if strings.Contains(msg, "\n") {
			t.Errorf("error has %d lines; want one", strings.Count(msg, "\n")+1)
		}
		if !strings.Contains(msg, "WRONGPASS") {
			t.Errorf("error %q; want it to say WRONGPASS", msg)
		}
		noSecret(t, planted, "error", []byte(msg))
		noSecret(t, planted, "stdout", out.Bytes())
		noSecret(t, planted, "stderr", errb.Bytes())
	})
}

// TestSecretsInUsageErrors checks that a refused list of Redis entries,
// whose items may hold passwords, is reported without them, as the command
// prints it (ExitCode).
func TestSecretsInUsageErrors(t *testing.T) {
	const pw = "planted-usage-pw"
	for _, tc := range []struct {
		name, addrs string
	}{
		// An empty item: the error quotes the list.
		{"empty item", "rediss://u:" + pw + "@127.0.0.1:6380,,"},
		// An item given twice: the error quotes the item.
		{"twice", "rediss://u:" + pw + "@127.0.0.1:6380,rediss://u:" + pw + "@127.0.0.1:6380"},
		// A URL that is not a Redis entry.
		{"bad url", "http://u:" + pw + "@127.0.0.1:6380"},
		// host:port with a login but no scheme.
		{"no scheme", "u:" + pw + "@127.0.0.1:6380"},
	} {
		var out, errb bytes.Buffer
		err := Run(context.Background(), []string{"run", "--strategy", "setnx", "--redis-addrs", tc.addrs, "--out", t.TempDir()}, &out, &errb)
		if code := ExitCode(err, &errb); code != 2 {
			t.Errorf("%s: exit code %d (%s); want 2", tc.name, code, servers.Redact(errb.String()))
		}
		noSecret(t, pw, tc.name+": stderr", errb.Bytes())
		noSecret(t, pw, tc.name+": stdout", out.Bytes())
	}
}

// noSecret fails the test when b, named what, holds secret, raw or
// percent-encoded.
func noSecret(t *testing.T, secret, what string, b []byte) {
	t.Helper()
	for _, form := range []string{secret, url.QueryEscape(secret)} {
		if bytes.Contains(b, []byte(form)) {
			t.Errorf("%s shows the planted password", what)
			return
		}
	}
}
