package store

import (
	"context"
	"net"
	"testing"
)

// A store served with a token answers only clients that present it
// (instances on agents reach the coordinator's store over TCP).
func TestServeToken(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	m := NewMemory()
	go func() { _ = ServeWith(ln, m, ServeOptions{Inline: true, Token: "s3cret"}) }()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	if err := m.Reset(ctx, Setup{Balances: []int64{100}, Payments: 1, PaymentAccount: []int32{0}}); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, token string
		ok          bool
	}{
		// The token: calls are answered.
		{"token", "s3cret", true},
		// Another token: the connection is closed before any call.
		{"other token", "guess", false},
		// None.
		{"no token", "", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cl, err := DialToken(ctx, ln.Addr().String(), c.token)
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			_, err = cl.Enter(ctx, EnterReq{LockKey: "k", Payment: 0, Account: 0, Token: 1})
			if got := err == nil; got != c.ok {
				t.Errorf("Enter: got err %v; want ok %v", err, c.ok)
			}
		})
	}
}
