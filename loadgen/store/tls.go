package store

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"errors"
	"fmt"
	"math/big"
	"net"
	"strings"
	"time"
)

// pinnedPrefix starts the address of a store served with ListenPinned:
// "tls:" + the certificate's SHA-256 in hex + "@" + HOST:PORT.
const pinnedPrefix = "tls:"

// pinnedValidity is how long a pinned certificate is valid; nothing checks
// it but TLS libraries that read it, and a soak may run for days.
const pinnedValidity = 30 * 24 * time.Hour

// ListenPinned serves TLS on ln with a certificate made for it (a new
// ECDSA P-256 key, self-signed), and returns the listener and the address
// Dial takes for it, which names the certificate by its SHA-256. It is the
// store link to instances on agents, which get the address over the agent
// link, so the user issues no certificate (see Pinned TLS in the package
// doc).
func ListenPinned(ln net.Listener) (net.Listener, string, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, "", fmt.Errorf("store TLS key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, "", fmt.Errorf("store TLS serial: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "lockbench store"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(pinnedValidity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if tcp, ok := ln.Addr().(*net.TCPAddr); ok {
		tmpl.IPAddresses = []net.IP{tcp.IP}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, "", fmt.Errorf("store TLS certificate: %w", err)
	}
	pin := sha256.Sum256(der)
	cfg := &tls.Config{
		Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}},
		MinVersion:   tls.VersionTLS13,
	}
	return tls.NewListener(ln, cfg), pinnedPrefix + hex.EncodeToString(pin[:]) + "@" + ln.Addr().String(), nil
}

// errPinned is a pinned address that is not one.
var errPinned = errors.New("store: bad TLS address: want tls:SHA256HEX@HOST:PORT")

// dialPinned connects to a store at a ListenPinned address (its "tls:"
// prefix removed), accepting only the certificate it names.
func dialPinned(ctx context.Context, d *net.Dialer, addr string) (net.Conn, error) {
	pinHex, hostPort, ok := strings.Cut(addr, "@")
	pin, err := hex.DecodeString(pinHex)
	if !ok || err != nil || len(pin) != sha256.Size {
		return nil, errPinned
	}
	raw, err := d.DialContext(ctx, "tcp", hostPort)
	if err != nil {
		return nil, err
	}
	conn := tls.Client(raw, &tls.Config{
		MinVersion: tls.VersionTLS13,
		// The certificate is checked against the pin, not a CA: see
		// ListenPinned.
		InsecureSkipVerify: true,
		VerifyConnection: func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("store: the server showed no certificate")
			}
			got := sha256.Sum256(cs.PeerCertificates[0].Raw)
			if !bytes.Equal(got[:], pin) {
				return errors.New("store: the server's certificate is not the one its address names")
			}
			return nil
		},
	})
	if err := conn.HandshakeContext(ctx); err != nil {
		raw.Close()
		return nil, fmt.Errorf("store TLS handshake with %s: %w", hostPort, err)
	}
	return conn, nil
}
