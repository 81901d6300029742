package store

import (
	"context"
	"errors"
	"net"
	"sync"
	"testing"
	"time"
)

// serveTest serves a fresh Memory on ln with o and dials it.
func serveTest(t *testing.T, ln net.Listener, o ServeOptions) (*Memory, *Client) {
	t.Helper()
	m := NewMemory()
	served := make(chan error, 1)
	go func() { served <- ServeWith(ln, m, o) }()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	c, err := Dial(ctx, ln.Addr().String())
	if err != nil {
		ln.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Close()
		ln.Close()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return m, c
}

// Every scripted store case gives the same answers through the inline
// server on a local (Unix) socket as through the memory store itself.
func TestClientInlineLocal(t *testing.T) {
	for _, tc := range storeCases {
		t.Run(tc.name, func(t *testing.T) {
			ln, err := ListenLocal()
			if err != nil {
				t.Fatal(err)
			}
			m, c := serveTest(t, ln, ServeOptions{Inline: true})
			ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
			defer cancel()
			if err := m.Reset(ctx, tc.setup); err != nil {
				t.Fatal(err)
			}
			h := holders{}
			for i, o := range tc.ops {
				o.run(ctx, t, i, rpcStore{Memory: m, client: c}, h)
			}
			got, err := m.Counts(ctx)
			if err != nil {
				t.Fatal(err)
			}
			// The window of exposure is timing; the counts are the verdict.
			got.OverlapNs, got.OverlapMaxNs = 0, 0
			if got != tc.want {
				t.Errorf("Counts: got %+v; want %+v", got, tc.want)
			}
		})
	}
}

// Many callers share one Client: every call gets its own answer (ids never
// cross), on both servers; the store's sentinel errors arrive as
// themselves.
func TestClientConcurrentCalls(t *testing.T) {
	for _, o := range []ServeOptions{{}, {Inline: true}} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		m, c := serveTest(t, ln, o)
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		const payments = 400
		accounts := make([]int32, payments)
		balances := make([]int64, payments)
		for i := range accounts {
			accounts[i] = int32(i)
			balances[i] = int64(1000 + i)
		}
		if err := m.Reset(ctx, bank(AccountMode, true, balances, accounts...)); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		errs := make(chan error, payments)
		for i := range payments {
			wg.Go(func() {
				key := "k" + string(rune('a'+i%26))
				read, err := c.Enter(ctx, EnterReq{LockKey: key, Token: int64(i + 1), Payment: int64(i), Account: int32(i), Instance: i % 3})
				if err != nil {
					errs <- err
					return
				}
				if read.Balance != int64(1000+i) {
					errs <- errors.New("an answer crossed to another caller")
					return
				}
				_, err = c.Finish(ctx, FinishReq{LockKey: key, Token: int64(i + 1), Payment: int64(i), Account: int32(i), Apply: true, Debit: 1, BaseVersion: read.Version, NewBalance: read.Balance - 1, Entry: read.Entry})
				errs <- err
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatalf("inline=%v: %v", o.Inline, err)
			}
		}
		if _, err := c.Finish(ctx, FinishReq{LockKey: "never", Payment: 1, Account: 1}); !errors.Is(err, errFinishWithoutEnter) {
			t.Errorf("inline=%v: Finish without Enter: got %v; want errors.Is errFinishWithoutEnter", o.Inline, err)
		}
		got, err := m.Counts(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got.Processed != payments {
			t.Errorf("inline=%v: processed %d; want %d", o.Inline, got.Processed, payments)
		}
	}
}

// A store that goes away fails the calls in flight and every later one
// at once, never a hang; a cancelled ctx ends a call promptly.
func TestClientServerGone(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	// A server that accepts and never answers.
	conns := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			conns <- c
		}
	}()
	defer ln.Close()
	c, err := Dial(context.Background(), ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	server := <-conns

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := c.Enter(ctx, EnterReq{LockKey: "k"}); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Enter on a silent server: got %v; want context.DeadlineExceeded", err)
	}
	done := make(chan error, 1)
	go func() { _, err := c.Finish(context.Background(), FinishReq{LockKey: "k"}); done <- err }()
	time.Sleep(20 * time.Millisecond)
	server.Close()
	select {
	case err := <-done:
		if err == nil {
			t.Error("Finish in flight when the server went: got nil; want an error")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Finish in flight when the server went: still waiting after 5s")
	}
	if _, err := c.Enter(context.Background(), EnterReq{LockKey: "k"}); err == nil {
		t.Error("Enter after the server went: got nil; want an error")
	}
}

// A client of another protocol version is refused: the server closes
// the connection.
func TestServeRefusesOtherVersion(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() { _ = Serve(ln, NewMemory()) }()
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte{'L', 'B', 'S', protoVersion + 1}); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	var b [1]byte
	if _, err := conn.Read(b[:]); err == nil {
		t.Error("read after a wrong version: got a byte; want the connection closed")
	}
}

// slowStore answers every Enter with want, whatever the bank holds.
type slowStore struct {
	*Memory
	want EnterResp
}

func (s slowStore) Enter(context.Context, EnterReq) (EnterResp, error) { return s.want, nil }

// Every field of Enter's answer crosses the connection, the fault's slow
// order (EnterResp.Slow) included, on both servers.
func TestClientEnterRoundTrip(t *testing.T) {
	want := EnterResp{Processed: true, Balance: -7, Version: 1 << 40, Slow: 1500*time.Millisecond + 3}
	for _, o := range []ServeOptions{{}, {Inline: true}} {
		ln, err := ListenLocal()
		if err != nil {
			t.Fatal(err)
		}
		served := make(chan error, 1)
		go func() { served <- ServeWith(ln, slowStore{Memory: NewMemory(), want: want}, o) }()
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		c, err := Dial(ctx, ln.Addr().String())
		if err != nil {
			cancel()
			ln.Close()
			t.Fatal(err)
		}
		got, err := c.Enter(ctx, EnterReq{LockKey: "k"})
		cancel()
		c.Close()
		ln.Close()
		if err != nil {
			t.Fatalf("inline=%v: Enter: %v", o.Inline, err)
		}
		if got != want {
			t.Errorf("inline=%v: Enter: got %+v; want %+v", o.Inline, got, want)
		}
		if err := <-served; err != nil {
			t.Errorf("inline=%v: Serve: %v", o.Inline, err)
		}
	}
}
