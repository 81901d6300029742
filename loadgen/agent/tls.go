package agent

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
)

// Environment variables naming TLS files, on both sides: the agent's
// certificate and key and the CA its coordinators' certificates are
// checked against (mutual TLS when set); the coordinator's CA for the
// agents' certificates, and its own certificate and key for mutual TLS.
const (
	CertEnv   = "LOCKBENCH_AGENT_CERT"
	KeyEnv    = "LOCKBENCH_AGENT_KEY"
	CACertEnv = "LOCKBENCH_AGENT_CACERT"
)

// TLSFiles names the PEM files of one side of TLS; empty fields are
// unused.
type TLSFiles struct {
	Cert, Key, CA string
}

// TLSFilesFromEnv reads CertEnv, KeyEnv and CACertEnv.
func TLSFilesFromEnv() TLSFiles {
	return TLSFiles{Cert: os.Getenv(CertEnv), Key: os.Getenv(KeyEnv), CA: os.Getenv(CACertEnv)}
}

// Empty reports whether no file is named: no TLS.
func (f TLSFiles) Empty() bool { return f == TLSFiles{} }

// ServerTLS is an agent's TLS: its certificate and key (required), and
// with a CA, mutual TLS (coordinators must show a certificate it signed).
// It returns nil, nil when no file is named.
func (f TLSFiles) ServerTLS() (*tls.Config, error) {
	if f.Empty() {
		return nil, nil
	}
	if f.Cert == "" || f.Key == "" {
		return nil, errors.New("agent TLS needs a certificate and a key")
	}
	cert, err := tls.LoadX509KeyPair(f.Cert, f.Key)
	if err != nil {
		return nil, fmt.Errorf("agent TLS: %w", err)
	}
	c := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if f.CA != "" {
		pool, err := loadCA(f.CA)
		if err != nil {
			return nil, err
		}
		c.ClientCAs, c.ClientAuth = pool, tls.RequireAndVerifyClientCert
	}
	return c, nil
}

// ClientTLS is a coordinator's TLS: the CA that signed the agents'
// certificates (required), and with a certificate and key, its own for
// mutual TLS. It returns nil, nil when no file is named.
func (f TLSFiles) ClientTLS() (*tls.Config, error) {
	if f.Empty() {
		return nil, nil
	}
	if f.CA == "" {
		return nil, errors.New("agent TLS needs the CA that signed the agents' certificates (" + CACertEnv + ")")
	}
	pool, err := loadCA(f.CA)
	if err != nil {
		return nil, err
	}
	c := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	if f.Cert != "" || f.Key != "" {
		cert, err := tls.LoadX509KeyPair(f.Cert, f.Key)
		if err != nil {
			return nil, fmt.Errorf("agent TLS: %w", err)
		}
		c.Certificates = []tls.Certificate{cert}
	}
	return c, nil
}

func loadCA(path string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("agent TLS: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("agent TLS: no certificate in %s", path)
	}
	return pool, nil
}
