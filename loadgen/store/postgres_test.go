package store

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestPostgresHoldsNothingAcrossEnterAndFinish pins that the store is not
// itself a lock: between a holder's Enter and its Finish, another session
// can lock and write every row the holder touched, without waiting.
func TestPostgresHoldsNothingAcrossEnterAndFinish(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	p := newTestPostgres(t)
	if err := p.Reset(ctx, bank(AccountMode, true, []int64{100}, 0)); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Enter(ctx, EnterReq{LockKey: "a0", Token: 1, Payment: 0, Account: 0}); err != nil {
		t.Fatal(err)
	}
	other, err := pgx.Connect(ctx, postgresDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close(context.Background())
	for _, q := range []string{
		`SELECT 1 FROM lockbench_store_lock_keys WHERE key = 'a0' FOR UPDATE NOWAIT`,
		`SELECT 1 FROM lockbench_store_accounts WHERE id = 0 FOR UPDATE NOWAIT`,
		`SELECT 1 FROM lockbench_store_payments WHERE id = 0 FOR UPDATE NOWAIT`,
		`UPDATE lockbench_store_accounts SET balance = 90 WHERE id = 0`,
	} {
		if _, err := other.Exec(ctx, q); err != nil {
			t.Errorf("%s: got %v; want no error (Enter must hold no row)", q, err)
		}
	}
	// The holder's write replaces the record whatever happened meanwhile.
	got, err := p.Finish(ctx, FinishReq{LockKey: "a0", Token: 1, Payment: 0, Account: 0, Apply: true, Debit: 30, NewBalance: 70})
	if err != nil || got != applied {
		t.Fatalf("Finish: got %+v, %v; want %+v", got, err, applied)
	}
}

// TestPostgresReadCommitted checks that the store's sessions use READ
// COMMITTED even when the DSN asks for serializable: serialisation
// failures would make the store refuse the very races it must count.
func TestPostgresReadCommitted(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	dsn := postgresDSN(t)
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	if !strings.Contains(dsn, "://") {
		sep = " "
	}
	p, err := NewPostgres(ctx, dsn+sep+"default_transaction_isolation=serializable")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var got string
	if err := p.pool.QueryRow(ctx, `SHOW transaction_isolation`).Scan(&got); err != nil {
		t.Fatal(err)
	}
	if got != "read committed" {
		t.Errorf("transaction_isolation: got %q; want %q", got, "read committed")
	}
}

// TestPostgresConnectErrors checks that a server that is not there fails
// fast and that errors never show the DSN's password.
func TestPostgresConnectErrors(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	const secret = "s3cret-pw"
	cases := []struct {
		name string
		dsn  string
	}{
		// Connection refused.
		{"nothing listening", "postgres://lb:" + secret + "@" + addr + "/lockbench?sslmode=disable"},
		// Same, key=value form.
		{"keyword form", "host=127.0.0.1 port=" + addr[strings.LastIndex(addr, ":")+1:] + " user=lb password=" + secret + " sslmode=disable"},
		// Unparseable: pgx would quote the DSN in its error.
		{"bad DSN", "postgres://lb:" + secret + "@127.0.0.1:notaport/lockbench"},
	}
	for _, c := range cases {
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		start := time.Now()
		p, err := NewPostgres(ctx, c.dsn)
		cancel()
		if err == nil {
			p.Close()
			t.Errorf("%s: got no error; want one", c.name)
			continue
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("%s: error shows the password: %v", c.name, err)
		}
		if d := time.Since(start); d > PostgresConnectTimeout+time.Second {
			t.Errorf("%s: took %v; want under %v", c.name, d, PostgresConnectTimeout+time.Second)
		}
	}
}

// TestPostgresContext checks that a cancelled context stops a call.
func TestPostgresContext(t *testing.T) {
	p := newTestPostgres(t)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	if err := p.Reset(ctx, bank(AccountMode, true, []int64{100}, 0)); err != nil {
		t.Fatal(err)
	}
	done, cancelDone := context.WithCancel(context.Background())
	cancelDone()
	if _, err := p.Enter(done, EnterReq{LockKey: "a0", Payment: 0, Account: 0}); !errors.Is(err, context.Canceled) {
		t.Errorf("Enter with a cancelled context: got %v; want %v", err, context.Canceled)
	}
	// Nothing entered, so Finish has nothing to close.
	_, err := p.Finish(ctx, FinishReq{LockKey: "a0", Payment: 0, Account: 0})
	if err == nil || err.Error() != "store: Finish without Enter" {
		t.Errorf("Finish: got %v; want store: Finish without Enter", err)
	}
}

// TestPostgresResetLarge loads a bank the size of a long run and checks
// that Reset is quick and that every payment starts unprocessed.
func TestPostgresResetLarge(t *testing.T) {
	const accounts, payments = 1000, 100_000
	p := newTestPostgres(t)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	setup := Setup{Mode: PaymentMode, Balances: make([]int64, accounts),
		Payments: payments, PaymentAccount: make([]int32, payments)}
	for i := range setup.PaymentAccount {
		setup.PaymentAccount[i] = int32(i % accounts)
	}
	start := time.Now()
	for range 2 { // the second Reset empties what the first loaded
		if err := p.Reset(ctx, setup); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("two Resets of %d payments: %v", payments, time.Since(start))
	checkCounts(ctx, t, p, Counts{Unprocessed: payments})
}
