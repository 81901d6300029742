package redisutil

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockbench/lockbench/strategies"
)

// Endpoint is one entry of Config.RedisAddrs or Config.RedisSentinels:
// host:port, or redis://[user:password@]host:port, or rediss://… for TLS.
type Endpoint struct {
	// Addr is host:port.
	Addr string
	// User and Password are the URL's; both empty for host:port. An empty
	// User with a Password logs in as the default user (AUTH password).
	User, Password string
	// HasPassword reports whether the URL gave a password (it may be empty).
	HasPassword bool
	// TLS is set by rediss://.
	TLS bool
}

// ParseEndpoint parses one Redis entry. Its errors never quote the entry,
// which may hold a password.
func ParseEndpoint(entry string) (Endpoint, error) {
	entry = strings.TrimSpace(entry)
	if !strings.Contains(entry, "://") {
		if _, _, err := net.SplitHostPort(entry); err != nil {
			shown := fmt.Sprintf("%q", entry)
			if strings.Contains(entry, "@") {
				shown = "(not shown: it may hold a password)"
			}
			return Endpoint{}, fmt.Errorf("redisutil: Redis entry %s is not host:port or redis[s]://[user:password@]host:port", shown)
		}
		return Endpoint{Addr: entry}, nil
	}
	u, err := url.Parse(entry)
	if err != nil {
		return Endpoint{}, errors.New("redisutil: a Redis URL cannot be parsed (not shown: it may hold a password)")
	}
	e := Endpoint{Addr: u.Host}
	switch u.Scheme {
	case "redis":
	case "rediss":
		e.TLS = true
	default:
		return Endpoint{}, fmt.Errorf("redisutil: Redis URL scheme %q; want redis:// or rediss://", u.Scheme)
	}
	if _, _, err := net.SplitHostPort(u.Host); err != nil {
		return Endpoint{}, fmt.Errorf("redisutil: Redis URL host %q is not host:port", u.Host)
	}
	if u.Path != "" && u.Path != "/" && u.Path != "/0" {
		return Endpoint{}, fmt.Errorf("redisutil: Redis URL %s names a database (%s): lockbench uses database 0", e.Addr, u.Path)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return Endpoint{}, fmt.Errorf("redisutil: Redis URL %s has a query or fragment; the CA is given by %s", e.Addr, "LOCKBENCH_REDIS_CACERT")
	}
	if u.User != nil {
		e.User = u.User.Username()
		e.Password, e.HasPassword = u.User.Password()
	}
	return e, nil
}

// String names the endpoint in errors and logs: host:port with "(TLS)"
// when it uses TLS, never the user or password.
func (e Endpoint) String() string {
	if e.TLS {
		return e.Addr + " (TLS)"
	}
	return e.Addr
}

// login returns the user and password to log in with: the entry's, else
// the default user with password.
func (e Endpoint) login(password string) (user, pw string) {
	if e.User != "" || e.HasPassword {
		return e.User, e.Password
	}
	return "", password
}

// TLSConfig returns the TLS configuration for servers verified by the CA
// certificates in the PEM file caFile, or by the system's roots when
// caFile is empty. It fails when the file cannot be read or holds no
// certificate.
func TLSConfig(caFile string) (*tls.Config, error) {
	c := &tls.Config{MinVersion: tls.VersionTLS12}
	if caFile == "" {
		return c, nil
	}
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("redisutil: Redis CA file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("redisutil: Redis CA file %s holds no PEM certificate", caFile)
	}
	c.RootCAs = pool
	return c, nil
}

// ClientOptions returns Options for the node of one RedisAddrs entry of
// cfg: its address, user and password (cfg.RedisPassword when the entry
// has none), and with rediss:// TLS verified by cfg.RedisCACert.
func ClientOptions(entry string, cfg strategies.Config) (*redis.Options, error) {
	e, err := ParseEndpoint(entry)
	if err != nil {
		return nil, err
	}
	o := Options(e.Addr, cfg.RedisPassword)
	o.Username, o.Password = e.login(cfg.RedisPassword)
	if cfg.Workers > 0 {
		// No more connections up front than calls in flight: each one
		// more is a handshake (TLS: a CPU-heavy one) for nothing.
		o.MinIdleConns = min(o.MinIdleConns, cfg.Workers)
	}
	if e.TLS {
		tc, err := TLSConfig(cfg.RedisCACert)
		if err != nil {
			return nil, err
		}
		o.TLSConfig, o.Dialer = tc, dialTLS(tc)
	}
	return o, nil
}

// EndpointName names the node of entry in errors: Endpoint.String, or a
// placeholder for an entry that does not parse (never the entry itself).
func EndpointName(entry string) string {
	e, err := ParseEndpoint(entry)
	if err != nil {
		return "(unparsable Redis entry)"
	}
	return e.String()
}

// dialTLS returns a go-redis dialer that dials TCP and does the TLS
// handshake with c, the server name taken from the address dialed when c
// has none (a Sentinel names the primary by its address). Both are
// bounded by DefaultDialTimeout. A TLS connection needs no idleConn:
// go-redis never peeks at a TLS connection's socket.
func dialTLS(c *tls.Config) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		ctx, cancel := context.WithTimeout(ctx, DefaultDialTimeout)
		defer cancel()
		d := net.Dialer{KeepAlive: 5 * time.Minute}
		raw, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		tc := c.Clone()
		if tc.ServerName == "" {
			if host, _, err := net.SplitHostPort(addr); err == nil {
				tc.ServerName = host
			}
		}
		conn := tls.Client(raw, tc)
		if err := conn.HandshakeContext(ctx); err != nil {
			_ = raw.Close()
			return nil, fmt.Errorf("TLS handshake: %w", err)
		}
		return conn, nil
	}
}

// isTLSTrust reports whether err is a failure to trust the server's
// certificate: a wrong or missing CA, or a certificate for another name.
// It is a misconfiguration, not a node that is down.
func isTLSTrust(err error) bool {
	var (
		verify   *tls.CertificateVerificationError
		unknown  x509.UnknownAuthorityError
		hostname x509.HostnameError
		invalid  x509.CertificateInvalidError
		header   tls.RecordHeaderError
	)
	return errors.As(err, &verify) || errors.As(err, &unknown) || errors.As(err, &hostname) ||
		errors.As(err, &invalid) || errors.As(err, &header)
}

// Master is Config.RedisMaster: the name the Sentinels know the primary
// by, and the primary's own login when it is given as a URL
// (redis://user:password@name).
type Master struct {
	Name           string
	User, Password string
	// HasLogin reports whether the URL gave a user or a password.
	HasLogin bool
}

// ParseMaster parses Config.RedisMaster: a name, or
// redis[s]://[user:password@]name. Its errors never quote a URL.
func ParseMaster(s string) (Master, error) {
	s = strings.TrimSpace(s)
	if !strings.Contains(s, "://") {
		return Master{Name: s}, nil
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "redis" && u.Scheme != "rediss") || u.Host == "" {
		return Master{}, errors.New("redisutil: the Redis master is not a name or redis[s]://[user:password@]name (not shown: it may hold a password)")
	}
	m := Master{Name: u.Host}
	if u.User != nil {
		m.User = u.User.Username()
		m.Password, _ = u.User.Password()
		m.HasLogin = true
	}
	return m, nil
}

// NewClients returns one client for each entry of cfg.RedisAddrs
// (ClientOptions), not connected yet, and the names of their nodes for
// errors (EndpointName). On error it returns no client.
func NewClients(cfg strategies.Config) ([]*redis.Client, []string, error) {
	clients := make([]*redis.Client, 0, len(cfg.RedisAddrs))
	names := make([]string, 0, len(cfg.RedisAddrs))
	for _, entry := range cfg.RedisAddrs {
		o, err := ClientOptions(entry, cfg)
		if err != nil {
			for _, c := range clients {
				_ = c.Close()
			}
			return nil, nil, err
		}
		clients = append(clients, redis.NewClient(o))
		names = append(names, EndpointName(entry))
	}
	return clients, names, nil
}

// FirstRefusal returns the first of errs that is not nil and does not wrap
// strategies.ErrUnavailable or a context error: a node that answered and
// refused (WRONGPASS, NOPERM, an untrusted certificate). A quorum strategy
// reports it alone, in one line: a login every node refuses is a
// misconfiguration, not a matter of how many nodes are up.
func FirstRefusal(errs []error) error {
	for _, err := range errs {
		if err != nil && !errors.Is(err, strategies.ErrUnavailable) &&
			!errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
			return err
		}
	}
	return nil
}
