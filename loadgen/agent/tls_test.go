package agent

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockbench/lockbench/internal/syncbuf"
)

// testCA writes a CA and two leaves it signed (a server's for 127.0.0.1
// and a client's) under dir, as PEM files, and returns their paths.
func testCA(t *testing.T, dir, name string) (ca string, server, client TLSFiles) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name + " CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(der)
	ca = filepath.Join(dir, name+"-ca.pem")
	writePEM(t, ca, "CERTIFICATE", der)
	leaf := func(leafName string, usage x509.ExtKeyUsage, serial int64) TLSFiles {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		lt := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: leafName},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
			ExtKeyUsage: []x509.ExtKeyUsage{usage}, KeyUsage: x509.KeyUsageDigitalSignature,
			IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}}
		d, err := x509.CreateCertificate(rand.Reader, lt, caCert, &k.PublicKey, key)
		if err != nil {
			t.Fatal(err)
		}
		kd, err := x509.MarshalECPrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		f := TLSFiles{Cert: filepath.Join(dir, name+"-"+leafName+".pem"), Key: filepath.Join(dir, name+"-"+leafName+"-key.pem")}
		writePEM(t, f.Cert, "CERTIFICATE", d)
		writePEM(t, f.Key, "EC PRIVATE KEY", kd)
		return f
	}
	return ca, leaf("server", x509.ExtKeyUsageServerAuth, 2), leaf("client", x509.ExtKeyUsageClientAuth, 3)
}

func writePEM(t *testing.T, path, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestMutualTLS: an agent with mutual TLS takes a coordinator that trusts
// its CA and shows a certificate its CA signed, and no other.
func TestMutualTLS(t *testing.T) {
	dir := t.TempDir()
	ca, server, client := testCA(t, dir, "good")
	otherCA, _, otherClient := testCA(t, dir, "other")
	srv := server
	srv.CA = ca // coordinators' certificates are checked against it
	stc, err := srv.ServerTLS()
	if err != nil {
		t.Fatal(err)
	}
	log := &syncbuf.Buffer{}
	a, err := New(Config{Token: testToken, TLS: stc, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = a.Serve(ctx, ln) }()
	defer func() { cancel(); <-done }()

	cases := []struct {
		name  string
		files TLSFiles // the coordinator's; empty: no TLS
		ok    bool
	}{
		// Trusts the agent's CA and shows a certificate it signed.
		{"mutual", TLSFiles{CA: ca, Cert: client.Cert, Key: client.Key}, true},
		// Trusts the agent's CA but shows no certificate.
		{"no client certificate", TLSFiles{CA: ca}, false},
		// Shows a certificate another CA signed.
		{"other client CA", TLSFiles{CA: ca, Cert: otherClient.Cert, Key: otherClient.Key}, false},
		// Does not trust the agent's certificate.
		{"other server CA", TLSFiles{CA: otherCA, Cert: client.Cert, Key: client.Key}, false},
		// No TLS at all.
		{"plain", TLSFiles{}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tc, err := c.files.ClientTLS()
			if err != nil {
				t.Fatal(err)
			}
			dctx, dcancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer dcancel()
			conn, err := Dial(dctx, ln.Addr().String(), DialConfig{Token: testToken, TLS: tc})
			if c.ok && err != nil {
				t.Fatalf("got %v; want a session", err)
			}
			if !c.ok {
				if err == nil {
					conn.Close()
					t.Fatalf("got a session; want none")
				}
				t.Logf("coordinator: %v", err)
				if strings.ContainsAny(err.Error(), "\n") || errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("got %q; want one line, at once", err)
				}
				return
			}
			conn.Close()
		})
	}
	// The store link follows the agent link: with TLS to the agents, the
	// store is served with TLS too, on addresses naming its certificate
	// (store.ListenPinned).
	tc, err := TLSFiles{CA: ca, Cert: client.Cert, Key: client.Key}.ClientTLS()
	if err != nil {
		t.Fatal(err)
	}
	pctx, pcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer pcancel()
	p, err := Open(pctx, []Target{{Addr: ln.Addr().String()}}, PoolConfig{DialConfig: DialConfig{Token: testToken, TLS: tc}})
	if err != nil {
		t.Fatal(err)
	}
	lns, addrs, err := p.Listen()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if !strings.HasPrefix(a, "tls:") {
			t.Errorf("store address for a TLS agent %q; want tls:PIN@HOST:PORT", a)
		}
	}
	closeAll(lns)
	p.Close()

	// The agent logs a refusal when its side of the handshake fails, which
	// may be after the coordinator's side has: wait for the last one.
	for deadline := time.Now().Add(5 * time.Second); strings.Count(log.String(), "refused") < 4 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("agent:\n%s", log)
	if got := strings.Count(log.String(), "refused"); got != 4 {
		t.Errorf("agent log has %d refusals; want 4, one per coordinator refused:\n%s", got, log)
	}
}
