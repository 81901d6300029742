package servers

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
)

// Secure makes Start run its Redis, etcd and Postgres servers with TLS and
// authentication, as a user's own cluster would: it is for the tests of
// lockbench's TLS and auth clients. lockbench itself never sets it; the
// servers it starts for a run stay plain on loopback. The sentinel topology
// and ZooKeeper do not support it.
type Secure struct {
	// Certs are the PEM files, as GenerateCA writes them. Servers use
	// Certs.ServerCert and Certs.ServerKey; etcd also checks client
	// certificates against Certs.CA (client-cert-auth). With Certs.CA empty
	// the servers run without TLS.
	Certs CertFiles
	// User and Password, when Password is set, are what a client must log
	// in with: a Redis ACL user (the default user is disabled; with the
	// sentinel topology the Sentinels have the same user, and use it with
	// the data nodes and each other), an etcd user
	// with the root role (auth enabled; the root user gets the same
	// password), and the Postgres superuser (scram-sha-256 over TCP). An
	// empty User is DefaultSecureUser.
	User, Password string
}

// DefaultSecureUser is Secure.User when it is empty: "lockbench".
const DefaultSecureUser = "lockbench"

// tls reports whether the servers use TLS.
func (s *Secure) tls() bool { return s != nil && s.Certs.CA != "" }

// auth reports whether the servers require a password.
func (s *Secure) auth() bool { return s != nil && s.Password != "" }

// user is the user clients log in as.
func (s *Secure) user() string {
	if s.User == "" {
		return DefaultSecureUser
	}
	return s.User
}

// check refuses a Secure that cannot start servers.
func (s *Secure) check() error {
	if s == nil {
		return nil
	}
	if s.tls() && (s.Certs.ServerCert == "" || s.Certs.ServerKey == "") {
		return errors.New("servers: Options.Secure: Certs.CA is set but not Certs.ServerCert and Certs.ServerKey")
	}
	return nil
}

// clientTLS is the TLS configuration of lockbench's own probes of a secure
// server: the CA, and the client certificate when there is one.
func (s *Secure) clientTLS() (*tls.Config, error) {
	if !s.tls() {
		return nil, nil
	}
	pem, err := os.ReadFile(s.Certs.CA)
	if err != nil {
		return nil, fmt.Errorf("servers: CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("servers: %s holds no PEM certificate", s.Certs.CA)
	}
	c := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	if s.Certs.ClientCert != "" {
		pair, err := tls.LoadX509KeyPair(s.Certs.ClientCert, s.Certs.ClientKey)
		if err != nil {
			return nil, fmt.Errorf("servers: client certificate: %w", err)
		}
		c.Certificates = []tls.Certificate{pair}
	}
	return c, nil
}

// redisURL is how a client names a Redis node at addr run with s: a
// rediss:// or redis:// URL with the user and password, or addr alone.
func (s *Secure) redisURL(addr string) string {
	if !s.tls() && !s.auth() {
		return addr
	}
	u := url.URL{Scheme: "redis", Host: addr}
	if s.tls() {
		u.Scheme = "rediss"
	}
	if s.auth() {
		u.User = url.UserPassword(s.user(), s.Password)
	}
	return u.String()
}

// redisHostPort returns the TCP address a Redis entry dials (host:port, or
// a redis[s]:// URL's host:port), for backend.hostPort. Its errors never
// quote a URL.
func redisHostPort(ep string) (string, error) {
	if !strings.Contains(ep, "://") {
		if strings.Contains(ep, "@") {
			return "", errors.New("servers: a Redis address is not host:port or redis[s]://[user:password@]host:port (not shown: it may hold a password)")
		}
		return splitHostPort("Redis address")(ep)
	}
	u, err := url.Parse(ep)
	if err != nil || (u.Scheme != "redis" && u.Scheme != "rediss") || u.Port() == "" {
		return "", errors.New("servers: a Redis URL is not redis[s]://[user:password@]host:port (not shown: it may hold a password)")
	}
	return u.Host, nil
}

// redisWithHostPort points a Redis entry at addr, keeping a URL's scheme
// (TLS) and login, for backend.withHostPort.
func redisWithHostPort(ep, addr string) (string, error) {
	if !strings.Contains(ep, "://") {
		return addr, nil
	}
	u, err := url.Parse(ep)
	if err != nil {
		return "", errors.New("servers: a Redis URL cannot be parsed (not shown: it may hold a password)")
	}
	u.Host = addr
	return u.String(), nil
}
