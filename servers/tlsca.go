package servers

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// TLSValidity is how long the certificates GenerateCA writes are valid: 24
// hours, from one hour ago (a little clock skew between processes is no
// reason to fail).
const TLSValidity = 24 * time.Hour

// CertFiles are the PEM files GenerateCA writes into one directory: a CA,
// a server certificate the CA signed for 127.0.0.1, ::1, localhost and
// any other hosts asked for, and
// a client certificate it signed (for servers that check client
// certificates, such as etcd with client-cert-auth).
type CertFiles struct {
	// CA is the CA certificate, what clients trust (LOCKBENCH_REDIS_CACERT,
	// LOCKBENCH_ETCD_CACERT, the DSN's sslrootcert).
	CA string
	// ServerCert and ServerKey are the server's certificate and key.
	ServerCert, ServerKey string
	// ClientCert and ClientKey are a client's certificate and key
	// (LOCKBENCH_ETCD_CERT, LOCKBENCH_ETCD_KEY).
	ClientCert, ClientKey string
}

// GenerateCA writes a new CA and the certificates of CertFiles into dir,
// keys readable by their owner only; hosts (IP addresses or names) are
// added to the server certificate's, for servers on Options.Host or an
// agent on another address. It is for tests and local TLS servers: the
// CA's key is not kept, so nothing else can ever be signed by it.
func GenerateCA(dir string, hosts ...string) (CertFiles, error) {
	names, ips := []string{"localhost"}, []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			ips = append(ips, ip)
		} else {
			names = append(names, h)
		}
	}
	f := CertFiles{
		CA:         filepath.Join(dir, "ca.pem"),
		ServerCert: filepath.Join(dir, "server.pem"),
		ServerKey:  filepath.Join(dir, "server-key.pem"),
		ClientCert: filepath.Join(dir, "client.pem"),
		ClientKey:  filepath.Join(dir, "client-key.pem"),
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return f, fmt.Errorf("servers: CA key: %w", err)
	}
	now := time.Now()
	ca := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "lockbench test CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(TLSValidity),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		return f, fmt.Errorf("servers: CA certificate: %w", err)
	}
	if err := writePEM(f.CA, "CERTIFICATE", caDER, 0o644); err != nil {
		return f, err
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return f, fmt.Errorf("servers: CA certificate: %w", err)
	}
	leaf := func(cn string, usage x509.ExtKeyUsage, certPath, keyPath string) error {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return fmt.Errorf("servers: %s key: %w", cn, err)
		}
		tmpl := &x509.Certificate{
			SerialNumber: serial(),
			Subject:      pkix.Name{CommonName: cn},
			NotBefore:    now.Add(-time.Hour),
			NotAfter:     now.Add(TLSValidity),
			KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
			ExtKeyUsage:  []x509.ExtKeyUsage{usage},
			DNSNames:     names,
			IPAddresses:  ips,
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
		if err != nil {
			return fmt.Errorf("servers: %s certificate: %w", cn, err)
		}
		keyDER, err := x509.MarshalPKCS8PrivateKey(key)
		if err != nil {
			return fmt.Errorf("servers: %s key: %w", cn, err)
		}
		if err := writePEM(certPath, "CERTIFICATE", der, 0o644); err != nil {
			return err
		}
		return writePEM(keyPath, "PRIVATE KEY", keyDER, 0o600)
	}
	if err := leaf("127.0.0.1", x509.ExtKeyUsageServerAuth, f.ServerCert, f.ServerKey); err != nil {
		return f, err
	}
	// etcd checks a client certificate's common name against its users
	// only when asked to (--client-cert-auth alone just verifies it).
	if err := leaf("lockbench-client", x509.ExtKeyUsageClientAuth, f.ClientCert, f.ClientKey); err != nil {
		return f, err
	}
	return f, nil
}

// serial returns a random 128-bit certificate serial number.
func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return big.NewInt(time.Now().UnixNano())
	}
	return n
}

func writePEM(path, typ string, der []byte, mode os.FileMode) error {
	b := pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
	if err := os.WriteFile(path, b, mode); err != nil {
		return fmt.Errorf("servers: %w", err)
	}
	return nil
}
