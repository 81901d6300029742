package store

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
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
	got, err := p.Finish(ctx, FinishReq{LockKey: "a0", Token: 1, Payment: 0, Account: 0, Apply: true, Debit: 30, NewBalance: 70, Entry: 1})
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
// that every payment starts unprocessed.
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
	if err := p.Reset(ctx, setup); err != nil {
		t.Fatal(err)
	}
	t.Logf("Reset of %d payments: %v", payments, time.Since(start))
	checkCounts(ctx, t, p, Counts{Unprocessed: payments})
}

// ExampleNewPostgres shows a coordinator preparing the bank and a worker's
// critical section. It needs a server, so it is compiled but not run.
func ExampleNewPostgres() {
	ctx := context.Background()
	s, err := NewPostgres(ctx, "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	// One account holding 100, one payment of it.
	if err := s.Reset(ctx, Setup{Mode: AccountMode, Fencing: true, Balances: []int64{100},
		Payments: 1, PaymentAccount: []int32{0}}); err != nil {
		fmt.Println(err)
		return
	}
	// After taking the lock on "a0" with fencing token 1:
	read, err := s.Enter(ctx, EnterReq{LockKey: "a0", Token: 1, Payment: 0, Account: 0})
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := s.Finish(ctx, FinishReq{LockKey: "a0", Token: 1, Payment: 0, Account: 0,
		Apply: !read.Processed, Debit: 30, BaseVersion: read.Version, NewBalance: read.Balance - 30})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Applied)
}

// BenchmarkStoreCriticalSection measures one Enter and one Finish (a
// delivery that applies its payment) from many parallel workers, each on
// its own payment of one of 64 accounts.
func BenchmarkStoreCriticalSection(b *testing.B) {
	const accounts, payments = 64, 1 << 17
	setup := Setup{Mode: PaymentMode, Fencing: true, Balances: make([]int64, accounts),
		Payments: payments, PaymentAccount: make([]int32, payments)}
	for i := range setup.PaymentAccount {
		setup.PaymentAccount[i] = int32(i % accounts)
	}
	for _, s := range []namedStore{{"memory", NewMemory()}, {"postgres", newTestPostgres(b)}} {
		b.Run(s.name, func(b *testing.B) {
			ctx := context.Background()
			if err := s.s.Reset(ctx, setup); err != nil {
				b.Fatal(err)
			}
			var next atomic.Int64
			b.SetParallelism(8)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					p := next.Add(1) % payments
					key := "p" + strconv.FormatInt(p, 10)
					acct := int32(p % accounts)
					if _, err := s.s.Enter(ctx, EnterReq{LockKey: key, Token: 1, Payment: p, Account: acct}); err != nil {
						b.Error(err)
						return
					}
					if _, err := s.s.Finish(ctx, FinishReq{LockKey: key, Token: 1, Payment: p, Account: acct, Apply: true, Debit: 1}); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
