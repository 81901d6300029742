package rueidislock_test

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/lockbench/lockbench/servers"
	"github.com/lockbench/lockbench/strategies"
)

// Through a Redis that speaks only TLS and wants an ACL user's password:
// the configuration's CA and login work; a wrong CA or a wrong password
// fails New within 5s, in one line, without the password, and not as an
// unavailable server.
func TestTLSAndAuth(t *testing.T) {
	const password = "rueidislock-tls-pw"
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	certs, err := servers.GenerateCA(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	other, err := servers.GenerateCA(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cl, err := servers.Start(ctx, servers.Needs{Redis: 1}, servers.Options{Secure: &servers.Secure{Certs: certs, Password: password}})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Stop()
	good := cl.Redis[0].URL()
	if !strings.HasPrefix(good, "rediss://") {
		t.Fatalf("secure Redis URL %q; want rediss://", good)
	}
	s, err := strategies.New(ctx, "rueidislock", strategies.Config{RedisAddrs: []string{good}, RedisCACert: certs.CA})
	if err != nil {
		t.Fatalf("New with the right CA and login: got %v; want a strategy", err)
	}
	defer s.Close()
	l, err := s.Acquire(ctx, "tls")
	if err != nil {
		t.Fatalf("Acquire over TLS: got %v", err)
	}
	if err := l.Release(ctx); err != nil {
		t.Errorf("Release over TLS: got %v; want nil", err)
	}

	u, err := url.Parse(good)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(u.User.Username(), "wrong-pw")
	for _, c := range []struct {
		name string
		cfg  strategies.Config
		want string
	}{
		// A CA that signed nothing the server uses.
		{"wrong-ca", strategies.Config{RedisAddrs: []string{good}, RedisCACert: other.CA}, "certificate"},
		// The right CA, the wrong password.
		{"wrong-password", strategies.Config{RedisAddrs: []string{u.String()}, RedisCACert: certs.CA}, "WRONGPASS"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // the case's own
			defer cancel()
			start := time.Now()
			s, err := strategies.New(ctx, "rueidislock", c.cfg)
			took := time.Since(start)
			switch {
			case err == nil:
				_ = s.Close()
				t.Fatalf("New: got a strategy; want an error")
			case took > 5*time.Second:
				t.Errorf("New: failed after %v; want within 5s", took)
			case errors.Is(err, strategies.ErrUnavailable):
				t.Errorf("New: got %v; want a refusal, not ErrUnavailable", err)
			case !strings.Contains(err.Error(), c.want):
				t.Errorf("New: got %q; want it to say %q", err, c.want)
			case strings.Contains(err.Error(), password) || strings.Contains(err.Error(), "wrong-pw") || strings.Contains(err.Error(), "\n"):
				t.Errorf("New: got %q; want one line without a password", err)
			}
			t.Logf("New failed after %v: %v", took.Round(time.Millisecond), err)
		})
	}
}
