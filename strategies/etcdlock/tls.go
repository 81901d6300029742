package etcdlock

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

	"github.com/lockbench/lockbench/strategies"
)

// TLSConfig returns the TLS configuration for the members of cfg, or nil
// when none of cfg.EtcdEndpoints is an https:// URL and no certificate is
// set: the CA certificates of cfg.EtcdCACert (the system's roots when
// empty) and the client certificate of cfg.EtcdCert and cfg.EtcdKey for
// members that check one (mutual TLS). Its errors name the files, never
// their contents.
func TLSConfig(cfg strategies.Config) (*tls.Config, error) {
	secure := cfg.EtcdCACert != "" || cfg.EtcdCert != "" || cfg.EtcdKey != ""
	for _, ep := range cfg.EtcdEndpoints {
		secure = secure || strings.HasPrefix(ep, "https://")
	}
	if !secure {
		return nil, nil
	}
	c := &tls.Config{MinVersion: tls.VersionTLS12}
	if cfg.EtcdCACert != "" {
		pem, err := os.ReadFile(cfg.EtcdCACert)
		if err != nil {
			return nil, fmt.Errorf("etcdlock: etcd CA file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("etcdlock: etcd CA file %s holds no PEM certificate", cfg.EtcdCACert)
		}
		c.RootCAs = pool
	}
	if (cfg.EtcdCert == "") != (cfg.EtcdKey == "") {
		return nil, errors.New("etcdlock: a client certificate needs both Config.EtcdCert and Config.EtcdKey (LOCKBENCH_ETCD_CERT, LOCKBENCH_ETCD_KEY)")
	}
	if cfg.EtcdCert != "" {
		pair, err := tls.LoadX509KeyPair(cfg.EtcdCert, cfg.EtcdKey)
		if err != nil {
			return nil, fmt.Errorf("etcdlock: etcd client certificate: %w", err)
		}
		c.Certificates = []tls.Certificate{pair}
	}
	return c, nil
}

// checkTrust does one TLS handshake with each https:// endpoint in turn
// until one completes, each bounded by DefaultDialTimeout, and returns an
// error only when a member's certificate is not trusted (a wrong CA, a
// certificate for another name, a plain port) or, with waitRefusal, when
// the member refuses the client's (it wants one, or one its CA signed):
// what gRPC would hide behind a timeout. Members that do not answer are
// left to New.
func checkTrust(ctx context.Context, endpoints []string, c *tls.Config, waitRefusal bool) error {
	for _, ep := range endpoints {
		u, err := url.Parse(ep)
		if err != nil || u.Scheme != "https" || u.Host == "" {
			continue
		}
		err = handshake(ctx, u.Host, c, waitRefusal)
		switch {
		case err == nil:
			return nil
		case untrusted(err):
			return fmt.Errorf("etcdlock: connect %s: server certificate not trusted (check the CA file, LOCKBENCH_ETCD_CACERT, and that the port speaks TLS): %w", u.Host, err)
		case refusedByServer(err):
			return fmt.Errorf("etcdlock: connect %s: the member refused the TLS connection; does it want a client certificate (LOCKBENCH_ETCD_CERT, LOCKBENCH_ETCD_KEY) signed by its CA? %w", u.Host, err)
		}
	}
	return nil
}

// refusalWait is how long handshake waits for the server's verdict on the
// client's certificate: 250ms. With TLS 1.3 the client's handshake is
// over before the server has checked the client's certificate; a refusal
// (certificate required, bad certificate) arrives as an alert on the
// first read.
const refusalWait = 250 * time.Millisecond

// handshake does one TLS handshake with addr and, with waitRefusal, waits
// up to refusalWait for a refusal of the client's certificate.
func handshake(ctx context.Context, addr string, c *tls.Config, waitRefusal bool) error {
	ctx, cancel := context.WithTimeout(ctx, DefaultDialTimeout)
	defer cancel()
	tc := c.Clone()
	if host, _, err := net.SplitHostPort(addr); err == nil && tc.ServerName == "" {
		tc.ServerName = host
	}
	d := tls.Dialer{Config: tc}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	if !waitRefusal {
		return nil
	}
	_ = conn.SetReadDeadline(time.Now().Add(refusalWait))
	var b [1]byte
	if _, err := conn.Read(b[:]); refusedByServer(err) {
		return err
	}
	return nil
}

// refusedByServer reports whether err is a TLS alert the server sent:
// it refused the handshake, most often the client's certificate.
func refusedByServer(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "remote error"
}

// untrusted reports whether err is a failure to trust the server's
// certificate, or a TLS client at a plain port.
func untrusted(err error) bool {
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
