package store

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"
)

// TestPinnedTLS: a store served with ListenPinned answers a client that
// dials the address it gave (TLS, that certificate), and no client that
// names another certificate or speaks plain TCP to it.
func TestPinnedTLS(t *testing.T) {
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln, addr, err := ListenPinned(raw)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if !strings.HasPrefix(addr, "tls:") || !strings.HasSuffix(addr, "@"+raw.Addr().String()) {
		t.Fatalf("address %q; want tls:PIN@%s", addr, raw.Addr())
	}
	m := NewMemory()
	go func() { _ = ServeWith(ln, m, ServeOptions{Token: "s3cret"}) }()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	if err := m.Reset(ctx, Setup{Balances: []int64{100}, Payments: 1, PaymentAccount: []int32{0}}); err != nil {
		t.Fatal(err)
	}

	cl, err := DialToken(ctx, addr, "s3cret")
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	read, err := cl.Enter(ctx, EnterReq{LockKey: "k", Payment: 0, Account: 0, Token: 1})
	if err != nil {
		t.Fatalf("Enter over TLS: %v", err)
	}
	if _, err := cl.Finish(ctx, FinishReq{LockKey: "k", Payment: 0, Account: 0, Token: 1, Apply: true, Debit: 10,
		BaseVersion: read.Version, NewBalance: read.Balance - 10, Entry: read.Entry}); err != nil {
		t.Fatalf("Finish over TLS: %v", err)
	}
	cl.Close()
	if c, err := m.Counts(ctx); err != nil || c.Processed != 1 {
		t.Errorf("Counts = %+v, %v; want the payment processed", c, err)
	}

	// Another certificate's pin: refused at the handshake, in one line.
	pin, hostPort, _ := strings.Cut(strings.TrimPrefix(addr, "tls:"), "@")
	other := "tls:" + strings.Repeat("0", len(pin)) + "@" + hostPort
	if cl, err := DialToken(ctx, other, "s3cret"); err == nil {
		cl.Close()
		t.Error("dial with another certificate's pin: got a client; want the handshake refused")
	} else if !strings.Contains(err.Error(), "certificate is not the one") || strings.Contains(err.Error(), "\n") {
		t.Errorf("dial with another pin: %q; want one line saying the certificate is not the one named", err)
	}
	// Not a pin at all.
	if _, err := DialToken(ctx, "tls:xyz@"+hostPort, "s3cret"); !errors.Is(err, errPinned) {
		t.Errorf("dial tls:xyz@…: %v; want %v", err, errPinned)
	}
	// Plain TCP to the TLS listener: no answer, an error within seconds.
	plain, err := DialToken(ctx, hostPort, "s3cret")
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	pctx, pcancel := context.WithTimeout(ctx, 10*time.Second)
	defer pcancel()
	if _, err := plain.Enter(pctx, EnterReq{LockKey: "k", Payment: 0, Account: 0, Token: 2}); err == nil || pctx.Err() != nil {
		t.Errorf("Enter in plain TCP to the TLS store: %v; want an error before the deadline", err)
	}
}
