package store

import (
	"context"
	"fmt"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/lockbench/lockbench/servers"
)

// testTimeout bounds each test's calls to a store.
const testTimeout = 30 * time.Second

func TestMain(m *testing.M) {
	code := m.Run()
	if pg.cluster != nil {
		if err := pg.cluster.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stop postgres:", err)
		}
	}
	os.Exit(code)
}

// pg is the PostgreSQL server the tests share: the one LOCKBENCH_PG_DSN
// names, or one started on loopback the first time a test needs it.
var pg struct {
	once    sync.Once
	dsn     string
	cluster *servers.Cluster
	err     error
}

func postgresDSN(t testing.TB) string {
	t.Helper()
	pg.once.Do(func() {
		if dsn := os.Getenv(servers.EnvPostgresDSN); dsn != "" {
			pg.dsn = dsn
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		pg.cluster, pg.err = servers.Start(ctx, servers.Needs{Postgres: true}, servers.Options{})
		if pg.err == nil {
			pg.dsn = pg.cluster.Postgres.DSN
		}
	})
	if pg.err != nil {
		t.Fatalf("start postgres: %v", pg.err)
	}
	return pg.dsn
}

func newTestPostgres(t testing.TB) *Postgres {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	p, err := NewPostgres(ctx, postgresDSN(t))
	if err != nil {
		t.Fatalf("NewPostgres: %v", err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// rpcStore is a Memory served on a loopback listener: workers reach it
// through a Client, as instance processes do, and the judge reads it
// directly.
type rpcStore struct {
	*Memory
	client *Client
}

func (s rpcStore) Enter(ctx context.Context, r EnterReq) (EnterResp, error) {
	return s.client.Enter(ctx, r)
}

func (s rpcStore) Finish(ctx context.Context, r FinishReq) (FinishResp, error) {
	return s.client.Finish(ctx, r)
}

func newTestRPC(t testing.TB) rpcStore {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	m := NewMemory()
	served := make(chan error, 1)
	go func() { served <- Serve(ln, m) }()
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
	return rpcStore{Memory: m, client: c}
}

type namedStore struct {
	name string
	s    Store
}

// stores returns every store under test: the in-memory reference, the same
// reached over RPC, and PostgreSQL. Each case must give the same verdict on
// all of them.
func stores(t *testing.T) []namedStore {
	t.Helper()
	return []namedStore{
		{"memory", NewMemory()},
		{"rpc", newTestRPC(t)},
		{"postgres", newTestPostgres(t)},
	}
}

// op is one call of a scripted case: an Enter or a Finish, with what the
// holder must be told.
type op struct {
	enter  *EnterReq
	finish *FinishReq
	read   EnterResp
	result FinishResp
	// err is the error message the call must fail with ("" for none).
	err string
}

func enter(r EnterReq, read EnterResp) op      { return op{enter: &r, read: read} }
func finish(r FinishReq, result FinishResp) op { return op{finish: &r, result: result} }
func enterFails(r EnterReq, err string) op     { return op{enter: &r, err: err} }
func finishFails(r FinishReq, err string) op   { return op{finish: &r, err: err} }

// What a Finish can be told.
var (
	applied  = FinishResp{Applied: true}
	rejected = FinishResp{StaleRejected: true}
	left     = FinishResp{} // no write asked for
)

func (o op) String() string {
	if o.enter != nil {
		return fmt.Sprintf("Enter(%+v)", *o.enter)
	}
	return fmt.Sprintf("Finish(%+v)", *o.finish)
}

// holders gives a scripted case's Finishes their entry numbers: a Finish
// without one is that of the earliest Enter of its key, token, payment
// and account still open, whose entry number the store returned.
type holders map[holderOf][]int64

type holderOf struct {
	key     string
	token   int64
	payment int64
	account int32
}

// entered notes the entry number an Enter of r got.
func (h holders) entered(r EnterReq, entry int64) {
	k := holderOf{r.LockKey, r.Token, r.Payment, r.Account}
	h[k] = append(h[k], entry)
}

// leaving fills in r's entry number, if it has none, from the earliest
// open Enter of its holder.
func (h holders) leaving(r FinishReq) FinishReq {
	if q := h[holderOf{r.LockKey, r.Token, r.Payment, r.Account}]; len(q) > 0 && r.Entry == 0 {
		r.Entry = q[0]
	}
	return r
}

// left closes the earliest open Enter of r's holder, once r succeeded.
func (h holders) left(r FinishReq) {
	k := holderOf{r.LockKey, r.Token, r.Payment, r.Account}
	if q := h[k]; len(q) > 0 {
		h[k] = q[1:]
	}
}

// run makes the call and checks its answer. An expected read without an
// entry number accepts any; an expected result without a refusal
// accepts any (Counts judges them).
func (o op) run(ctx context.Context, t *testing.T, i int, a Accessor, h holders) {
	t.Helper()
	var err error
	if o.enter != nil {
		var got EnterResp
		got, err = a.Enter(ctx, *o.enter)
		if err == nil {
			h.entered(*o.enter, got.Entry)
			if o.read.Entry == 0 {
				got.Entry = 0
			}
		}
		if err == nil && got != o.read {
			t.Errorf("op %d %v: got %+v; want %+v", i, o, got, o.read)
		}
	} else {
		var got FinishResp
		r := h.leaving(*o.finish)
		got, err = a.Finish(ctx, r)
		if err == nil {
			h.left(r)
		}
		if err == nil && o.result.Refused == NotRefused {
			got.Refused = NotRefused
		}
		if err == nil && got != o.result {
			t.Errorf("op %d %v: got %+v; want %+v", i, o, got, o.result)
		}
	}
	switch {
	case err == nil && o.err != "":
		t.Errorf("op %d %v: got no error; want %q", i, o, o.err)
	case err != nil && err.Error() != o.err:
		t.Errorf("op %d %v: got error %q; want %q", i, o, err, o.err)
	}
}

// bank is a Setup whose payments 0..n-1 belong to the given accounts.
func bank(mode Mode, fencing bool, balances []int64, paymentAccount ...int32) Setup {
	return Setup{Mode: mode, Fencing: fencing, Balances: balances,
		Payments: len(paymentAccount), PaymentAccount: paymentAccount}
}

type storeCase struct {
	name  string
	setup Setup
	ops   []op
	want  Counts
}

var storeCases = []storeCase{
	{
		// The lock works: the second delivery finds the payment processed
		// and writes nothing.
		name:  "sequential holders on one key",
		setup: bank(AccountMode, true, []int64{100}, 0),
		ops: []op{
			enter(EnterReq{LockKey: "a0", Token: 1, Payment: 0, Account: 0}, EnterResp{Balance: 100}),
			finish(FinishReq{LockKey: "a0", Token: 1, Payment: 0, Account: 0, Apply: true, Debit: 30, NewBalance: 70}, applied),
			enter(EnterReq{LockKey: "a0", Token: 2, Payment: 0, Account: 0}, EnterResp{Processed: true, Balance: 70, Version: 1}),
			finish(FinishReq{LockKey: "a0", Token: 2, Payment: 0, Account: 0}, left),
		},
		want: Counts{Processed: 1, Applications: 1},
	},
	{
		// Two holders inside the payment's key at once both see it
		// unprocessed and both debit it: double-processing. The atomic
		// debit loses neither.
		name:  "two holders at once apply one payment",
		setup: bank(PaymentMode, false, []int64{100}, 0),
		ops: []op{
			enter(EnterReq{LockKey: "p0", Payment: 0, Account: 0}, EnterResp{Balance: 100}),
			enter(EnterReq{LockKey: "p0", Payment: 0, Account: 0}, EnterResp{Balance: 100}),
			finish(FinishReq{LockKey: "p0", Payment: 0, Account: 0, Apply: true, Debit: 30}, applied),
			finish(FinishReq{LockKey: "p0", Payment: 0, Account: 0, Apply: true, Debit: 30}, applied),
			enter(EnterReq{LockKey: "p0", Payment: 0, Account: 0}, EnterResp{Processed: true, Balance: 40, Version: 2}),
			finish(FinishReq{LockKey: "p0", Payment: 0, Account: 0}, left),
		},
		want: Counts{Processed: 1, Duplicates: 1, Overlaps: 1, StaleAccepted: 1, Applications: 2},
	},
	{
		// Both holders read version 0; the second write replaces the
		// record, dropping the first payment's debit and its mark: one
		// lost update, and the first payment's acknowledged work is lost
		// (a later holder finds it unprocessed).
		name:  "account mode: stale read-modify-write loses the first payment",
		setup: bank(AccountMode, false, []int64{100}, 0, 0),
		ops: []op{
			enter(EnterReq{LockKey: "a0", Payment: 0, Account: 0}, EnterResp{Balance: 100}),
			enter(EnterReq{LockKey: "a0", Payment: 1, Account: 0}, EnterResp{Balance: 100}),
			finish(FinishReq{LockKey: "a0", Payment: 0, Account: 0, Apply: true, Debit: 30, NewBalance: 70}, applied),
			finish(FinishReq{LockKey: "a0", Payment: 1, Account: 0, Apply: true, Debit: 20, NewBalance: 80}, applied),
			enter(EnterReq{LockKey: "a0", Payment: 0, Account: 0}, EnterResp{Balance: 80, Version: 2}),
			finish(FinishReq{LockKey: "a0", Payment: 0, Account: 0}, left),
		},
		want: Counts{Processed: 2, Lost: 1, LostUpdates: 1, Overlaps: 1, StaleAccepted: 1, Applications: 2},
	},
	{
		// As above, but a later delivery re-applies the lost payment: it is
		// no longer lost, and now counts as processed twice.
		name:  "account mode: a lost payment re-applied is not lost",
		setup: bank(AccountMode, false, []int64{100}, 0, 0),
		ops: []op{
			enter(EnterReq{LockKey: "a0", Payment: 0, Account: 0}, EnterResp{Balance: 100}),
			enter(EnterReq{LockKey: "a0", Payment: 1, Account: 0}, EnterResp{Balance: 100}),
			finish(FinishReq{LockKey: "a0", Payment: 0, Account: 0, Apply: true, Debit: 30, NewBalance: 70}, applied),
			finish(FinishReq{LockKey: "a0", Payment: 1, Account: 0, Apply: true, Debit: 20, NewBalance: 80}, applied),
			enter(EnterReq{LockKey: "a0", Payment: 0, Account: 0}, EnterResp{Balance: 80, Version: 2}),
			finish(FinishReq{LockKey: "a0", Payment: 0, Account: 0, Apply: true, Debit: 30, BaseVersion: 2, NewBalance: 50}, applied),
			enter(EnterReq{LockKey: "a0", Payment: 1, Account: 0}, EnterResp{Processed: true, Balance: 50, Version: 3}),
			finish(FinishReq{LockKey: "a0", Payment: 1, Account: 0}, left),
		},
		want: Counts{Processed: 2, Duplicates: 1, LostUpdates: 1, Overlaps: 1, StaleAccepted: 1, Applications: 3},
	},
	{
		// A write based on a read two versions old overwrites both writes
		// made since: two lost updates, two payments lost.
		name:  "account mode: a write two versions stale loses two",
		setup: bank(AccountMode, false, []int64{100}, 0, 0, 0),
		ops: []op{
			enter(EnterReq{LockKey: "a0", Payment: 2, Account: 0}, EnterResp{Balance: 100}),
			enter(EnterReq{LockKey: "a0", Payment: 0, Account: 0}, EnterResp{Balance: 100}),
			finish(FinishReq{LockKey: "a0", Payment: 0, Account: 0, Apply: true, Debit: 10, NewBalance: 90}, applied),
			enter(EnterReq{LockKey: "a0", Payment: 1, Account: 0}, EnterResp{Balance: 90, Version: 1}),
			finish(FinishReq{LockKey: "a0", Payment: 1, Account: 0, Apply: true, Debit: 10, BaseVersion: 1, NewBalance: 80}, applied),
			finish(FinishReq{LockKey: "a0", Payment: 2, Account: 0, Apply: true, Debit: 10, NewBalance: 90}, applied),
		},
		want: Counts{Processed: 3, Lost: 2, LostUpdates: 2, Overlaps: 2, StaleAccepted: 1, Applications: 3},
	},
	{
		// Three holders all read version 0 and write in turn, each
		// replacing the record: the last record holds only C's debit. A's
		// debit was dropped twice (by B's write and by C's) but is one
		// debit missing: two lost updates, not 1 + 2.
		name:  "account mode: three writers from version 0 lose two",
		setup: bank(AccountMode, false, []int64{100}, 0, 0, 0),
		ops: []op{
			enter(EnterReq{LockKey: "a0", Payment: 0, Account: 0}, EnterResp{Balance: 100}),
			enter(EnterReq{LockKey: "a0", Payment: 1, Account: 0}, EnterResp{Balance: 100}),
			enter(EnterReq{LockKey: "a0", Payment: 2, Account: 0}, EnterResp{Balance: 100}),
			finish(FinishReq{LockKey: "a0", Payment: 0, Account: 0, Apply: true, Debit: 10, NewBalance: 90}, applied),
			finish(FinishReq{LockKey: "a0", Payment: 1, Account: 0, Apply: true, Debit: 20, NewBalance: 80}, applied),
			finish(FinishReq{LockKey: "a0", Payment: 2, Account: 0, Apply: true, Debit: 30, NewBalance: 70}, applied),
			enter(EnterReq{LockKey: "a0", Payment: 0, Account: 0}, EnterResp{Balance: 70, Version: 3}),
			finish(FinishReq{LockKey: "a0", Payment: 0, Account: 0}, left),
			enter(EnterReq{LockKey: "a0", Payment: 1, Account: 0}, EnterResp{Balance: 70, Version: 3}),
			finish(FinishReq{LockKey: "a0", Payment: 1, Account: 0}, left),
			enter(EnterReq{LockKey: "a0", Payment: 2, Account: 0}, EnterResp{Processed: true, Balance: 70, Version: 3}),
			finish(FinishReq{LockKey: "a0", Payment: 2, Account: 0}, left),
		},
		want: Counts{Processed: 3, Lost: 2, LostUpdates: 2, Overlaps: 2, StaleAccepted: 2, Applications: 3},
	},
	{
		// A and B read version 0; A writes version 1; C reads version 1
		// (A's record); B's write (from version 0) drops A's payment —
		// a holder now finds it unprocessed — but C's write, computed from
		// A's record, brings it back. The final record holds A and C
		// (balance 100 - 10 - 30): only B's debit is missing.
		name:  "account mode: a write from an older read resurrects what it read",
		setup: bank(AccountMode, false, []int64{100}, 0, 0, 0),
		ops: []op{
			enter(EnterReq{LockKey: "a0", Payment: 0, Account: 0}, EnterResp{Balance: 100}),
			enter(EnterReq{LockKey: "a0", Payment: 1, Account: 0}, EnterResp{Balance: 100}),
			finish(FinishReq{LockKey: "a0", Payment: 0, Account: 0, Apply: true, Debit: 10, NewBalance: 90}, applied),
			enter(EnterReq{LockKey: "a0", Payment: 2, Account: 0}, EnterResp{Balance: 90, Version: 1}),
			finish(FinishReq{LockKey: "a0", Payment: 1, Account: 0, Apply: true, Debit: 20, NewBalance: 80}, applied),
			enter(EnterReq{LockKey: "a0", Payment: 0, Account: 0}, EnterResp{Balance: 80, Version: 2}),
			finish(FinishReq{LockKey: "a0", Payment: 0, Account: 0}, left),
			finish(FinishReq{LockKey: "a0", Payment: 2, Account: 0, Apply: true, Debit: 30, BaseVersion: 1, NewBalance: 60}, applied),
			enter(EnterReq{LockKey: "a0", Payment: 0, Account: 0}, EnterResp{Processed: true, Balance: 60, Version: 3}),
			finish(FinishReq{LockKey: "a0", Payment: 0, Account: 0}, left),
			enter(EnterReq{LockKey: "a0", Payment: 1, Account: 0}, EnterResp{Balance: 60, Version: 3}),
			finish(FinishReq{LockKey: "a0", Payment: 1, Account: 0}, left),
			enter(EnterReq{LockKey: "a0", Payment: 2, Account: 0}, EnterResp{Processed: true, Balance: 60, Version: 3}),
			finish(FinishReq{LockKey: "a0", Payment: 2, Account: 0}, left),
		},
		want: Counts{Processed: 3, Lost: 1, LostUpdates: 1, Overlaps: 3, StaleAccepted: 3, Applications: 3},
	},
	{
		// A write that drops a decline (Debit 0) loses that payment's
		// acknowledged work, but no debit: lost, not a lost update.
		name:  "account mode: an overwritten decline is lost but no lost update",
		setup: bank(AccountMode, false, []int64{5}, 0, 0),
		ops: []op{
			enter(EnterReq{LockKey: "a0", Payment: 0, Account: 0}, EnterResp{Balance: 5}),
			enter(EnterReq{LockKey: "a0", Payment: 1, Account: 0}, EnterResp{Balance: 5}),
			finish(FinishReq{LockKey: "a0", Payment: 0, Account: 0, Apply: true, NewBalance: 5}, applied),
			finish(FinishReq{LockKey: "a0", Payment: 1, Account: 0, Apply: true, Debit: 5, NewBalance: 0}, applied),
		},
		want: Counts{Processed: 2, Lost: 1, Overlaps: 1, StaleAccepted: 1, Applications: 2},
	},
	{
		// Holders one after another, each writing from the version it
		// read: every record holds every payment so far.
		name:  "account mode: sequential writes lose nothing",
		setup: bank(AccountMode, false, []int64{100}, 0, 0, 0),
		ops: []op{
			enter(EnterReq{LockKey: "a0", Payment: 0, Account: 0}, EnterResp{Balance: 100}),
			finish(FinishReq{LockKey: "a0", Payment: 0, Account: 0, Apply: true, Debit: 10, NewBalance: 90}, applied),
			enter(EnterReq{LockKey: "a0", Payment: 1, Account: 0}, EnterResp{Balance: 90, Version: 1}),
			finish(FinishReq{LockKey: "a0", Payment: 1, Account: 0, Apply: true, Debit: 20, BaseVersion: 1, NewBalance: 70}, applied),
			enter(EnterReq{LockKey: "a0", Payment: 2, Account: 0}, EnterResp{Balance: 70, Version: 2}),
			finish(FinishReq{LockKey: "a0", Payment: 2, Account: 0, Apply: true, Debit: 30, BaseVersion: 2, NewBalance: 40}, applied),
			enter(EnterReq{LockKey: "a0", Payment: 0, Account: 0}, EnterResp{Processed: true, Balance: 40, Version: 3}),
			finish(FinishReq{LockKey: "a0", Payment: 0, Account: 0}, left),
		},
		want: Counts{Processed: 3, Applications: 3},
	},
	{
		// In payment mode the debit is atomic: holders that all read
		// version 0 and send it as BaseVersion still lose nothing.
		name:  "payment mode: concurrent writes from one version lose nothing",
		setup: bank(PaymentMode, false, []int64{100}, 0, 0, 0),
		ops: []op{
			enter(EnterReq{LockKey: "p0", Payment: 0, Account: 0}, EnterResp{Balance: 100}),
			enter(EnterReq{LockKey: "p1", Payment: 1, Account: 0}, EnterResp{Balance: 100}),
			enter(EnterReq{LockKey: "p2", Payment: 2, Account: 0}, EnterResp{Balance: 100}),
			finish(FinishReq{LockKey: "p0", Payment: 0, Account: 0, Apply: true, Debit: 10, NewBalance: 90}, applied),
			finish(FinishReq{LockKey: "p1", Payment: 1, Account: 0, Apply: true, Debit: 20, NewBalance: 80}, applied),
			finish(FinishReq{LockKey: "p2", Payment: 2, Account: 0, Apply: true, Debit: 30, NewBalance: 70}, applied),
			enter(EnterReq{LockKey: "p0", Payment: 0, Account: 0}, EnterResp{Processed: true, Balance: 40, Version: 3}),
			finish(FinishReq{LockKey: "p0", Payment: 0, Account: 0}, left),
		},
		want: Counts{Processed: 3, Applications: 3},
	},
	{
		// Per-payment keys do not exclude each other: two payments of one
		// account, with balance for one, both pass the check and both
		// debit. The account is overdrawn once however often it goes
		// further below zero.
		name:  "payment mode: two payments overdraw one account",
		setup: bank(PaymentMode, false, []int64{50, 50}, 0, 0, 0),
		ops: []op{
			enter(EnterReq{LockKey: "p0", Payment: 0, Account: 0}, EnterResp{Balance: 50}),
			enter(EnterReq{LockKey: "p1", Payment: 1, Account: 0}, EnterResp{Balance: 50}),
			finish(FinishReq{LockKey: "p0", Payment: 0, Account: 0, Apply: true, Debit: 40}, applied),
			finish(FinishReq{LockKey: "p1", Payment: 1, Account: 0, Apply: true, Debit: 40}, applied),
			enter(EnterReq{LockKey: "p2", Payment: 2, Account: 0}, EnterResp{Balance: -30, Version: 2}),
			finish(FinishReq{LockKey: "p2", Payment: 2, Account: 0, Apply: true, Debit: 10}, applied),
		},
		want: Counts{Processed: 3, Overdrafts: 1, Applications: 3},
	},
	{
		// A paused holder with fencing (Kleppmann's timeline): token 1 pauses inside,
		// its lock expires, token 2 enters and writes; token 1's late write
		// is refused. No duplicate.
		name:  "fencing on: the stale holder's write is rejected",
		setup: bank(AccountMode, true, []int64{100}, 0),
		ops: []op{
			enter(EnterReq{LockKey: "a0", Token: 1, Payment: 0, Account: 0}, EnterResp{Balance: 100}),
			enter(EnterReq{LockKey: "a0", Token: 2, Payment: 0, Account: 0}, EnterResp{Balance: 100}),
			finish(FinishReq{LockKey: "a0", Token: 2, Payment: 0, Account: 0, Apply: true, Debit: 30, NewBalance: 70}, applied),
			finish(FinishReq{LockKey: "a0", Token: 1, Payment: 0, Account: 0, Apply: true, Debit: 30, NewBalance: 70}, rejected),
			enter(EnterReq{LockKey: "a0", Token: 3, Payment: 0, Account: 0}, EnterResp{Processed: true, Balance: 70, Version: 1}),
			finish(FinishReq{LockKey: "a0", Token: 3, Payment: 0, Account: 0}, left),
		},
		want: Counts{Processed: 1, Overlaps: 1, StaleRejected: 1, Applications: 1},
	},
	{
		// The same timeline with fencing off: the stale write is counted
		// and applied — a duplicate, and a lost update since it was based
		// on version 0.
		name:  "fencing off: the stale holder's write is accepted",
		setup: bank(AccountMode, false, []int64{100}, 0),
		ops: []op{
			enter(EnterReq{LockKey: "a0", Token: 1, Payment: 0, Account: 0}, EnterResp{Balance: 100}),
			enter(EnterReq{LockKey: "a0", Token: 2, Payment: 0, Account: 0}, EnterResp{Balance: 100}),
			finish(FinishReq{LockKey: "a0", Token: 2, Payment: 0, Account: 0, Apply: true, Debit: 30, NewBalance: 70}, applied),
			finish(FinishReq{LockKey: "a0", Token: 1, Payment: 0, Account: 0, Apply: true, Debit: 30, NewBalance: 70}, applied),
			enter(EnterReq{LockKey: "a0", Token: 3, Payment: 0, Account: 0}, EnterResp{Processed: true, Balance: 70, Version: 2}),
			finish(FinishReq{LockKey: "a0", Token: 3, Payment: 0, Account: 0}, left),
		},
		want: Counts{Processed: 1, Duplicates: 1, LostUpdates: 1, Overlaps: 1, StaleAccepted: 1, Applications: 2},
	},
	{
		// A token equal to the newest one seen is not refused (the
		// "fencing_token < $3" would refuse it), and a holder without a
		// token (0) never is: fencing cannot help a strategy that has no
		// tokens. Either way the first holder was superseded (the second
		// entered before it wrote): its write is stale, and accepted.
		name:  "fencing on: equal tokens and no tokens are not refused",
		setup: bank(PaymentMode, true, []int64{100, 100}, 0, 1),
		ops: []op{
			enter(EnterReq{LockKey: "p0", Token: 7, Payment: 0, Account: 0}, EnterResp{Balance: 100}),
			enter(EnterReq{LockKey: "p0", Token: 7, Payment: 0, Account: 0}, EnterResp{Balance: 100}),
			finish(FinishReq{LockKey: "p0", Token: 7, Payment: 0, Account: 0, Apply: true, Debit: 10}, applied),
			finish(FinishReq{LockKey: "p0", Token: 7, Payment: 0, Account: 0, Apply: true, Debit: 10}, applied),
			enter(EnterReq{LockKey: "p1", Payment: 1, Account: 1}, EnterResp{Balance: 100}),
			enter(EnterReq{LockKey: "p1", Payment: 1, Account: 1}, EnterResp{Balance: 100}),
			finish(FinishReq{LockKey: "p1", Payment: 1, Account: 1, Apply: true, Debit: 10}, applied),
			finish(FinishReq{LockKey: "p1", Payment: 1, Account: 1, Apply: true, Debit: 10}, applied),
		},
		// Not stale, but the second write's token was the first's: reused.
		want: Counts{Processed: 2, Duplicates: 2, Overlaps: 2, StaleAccepted: 2, Applications: 4, TokenReused: 1},
	},
	{
		// Tokens are per lock key: a small token on another key is not
		// stale, and a holder that leaves without writing is not judged.
		name:  "fencing on: tokens are per key; leaving is not judged",
		setup: bank(AccountMode, true, []int64{100, 100}, 0, 1),
		ops: []op{
			enter(EnterReq{LockKey: "a0", Token: 5, Payment: 0, Account: 0}, EnterResp{Balance: 100}),
			finish(FinishReq{LockKey: "a0", Token: 5, Payment: 0, Account: 0, Apply: true, Debit: 30, NewBalance: 70}, applied),
			enter(EnterReq{LockKey: "a1", Token: 1, Payment: 1, Account: 1}, EnterResp{Balance: 100}),
			finish(FinishReq{LockKey: "a1", Token: 1, Payment: 1, Account: 1, Apply: true, Debit: 30, NewBalance: 70}, applied),
			enter(EnterReq{LockKey: "a0", Token: 3, Payment: 0, Account: 0}, EnterResp{Processed: true, Balance: 70, Version: 1}),
			finish(FinishReq{LockKey: "a0", Token: 3, Payment: 0, Account: 0}, left),
		},
		want: Counts{Processed: 2, Applications: 2},
	},
	{
		// Staleness is the order holders entered in, not the token's
		// value: a holder without tokens whose lease expired while it
		// worked writes after the next holder entered. Superseded: its
		// write is stale, accepted (no token to refuse it by).
		name:  "a superseded holder's write is stale, without tokens",
		setup: bank(AccountMode, true, []int64{100}, 0),
		ops: []op{
			enter(EnterReq{LockKey: "a0", Payment: 0, Account: 0}, EnterResp{Balance: 100, Entry: 1}),
			enter(EnterReq{LockKey: "a0", Payment: 0, Account: 0}, EnterResp{Balance: 100, Entry: 2}),
			finish(FinishReq{LockKey: "a0", Payment: 0, Account: 0, Entry: 2}, left),
			finish(FinishReq{LockKey: "a0", Payment: 0, Account: 0, Apply: true, Debit: 30, NewBalance: 70, Entry: 1},
				FinishResp{Applied: true, Refused: Stale}),
		},
		want: Counts{Processed: 1, Overlaps: 1, StaleAccepted: 1, Applications: 1},
	},
	{
		// A fencing counter that restarted hands out smaller tokens: the
		// next holder, who entered after the last one left, is not
		// superseded. Its token is older than the newest the key has
		// seen: regressed, refused with fencing (availability lost), not
		// stale.
		name:  "fencing on: a reset counter's token is regressed, not stale",
		setup: bank(AccountMode, true, []int64{100}, 0, 0),
		ops: []op{
			enter(EnterReq{LockKey: "a0", Token: 5, Payment: 0, Account: 0}, EnterResp{Balance: 100, Entry: 1}),
			finish(FinishReq{LockKey: "a0", Token: 5, Payment: 0, Account: 0, Apply: true, Debit: 30, NewBalance: 70}, applied),
			enter(EnterReq{LockKey: "a0", Token: 1, Payment: 1, Account: 0}, EnterResp{Balance: 70, Version: 1, Entry: 2}),
			finish(FinishReq{LockKey: "a0", Token: 1, Payment: 1, Account: 0, Apply: true, Debit: 30, BaseVersion: 1, NewBalance: 40},
				FinishResp{StaleRejected: true, Refused: TokenRegressed}),
		},
		want: Counts{Processed: 1, Unprocessed: 1, TokenRegressed: 1, Applications: 1},
	},
	{
		// The same with fencing off: applied, regressed, and safe.
		name:  "fencing off: a reset counter's token is regressed, and applied",
		setup: bank(AccountMode, false, []int64{100}, 0, 0),
		ops: []op{
			enter(EnterReq{LockKey: "a0", Token: 5, Payment: 0, Account: 0}, EnterResp{Balance: 100}),
			finish(FinishReq{LockKey: "a0", Token: 5, Payment: 0, Account: 0, Apply: true, Debit: 30, NewBalance: 70}, applied),
			enter(EnterReq{LockKey: "a0", Token: 1, Payment: 1, Account: 0}, EnterResp{Balance: 70, Version: 1}),
			finish(FinishReq{LockKey: "a0", Token: 1, Payment: 1, Account: 0, Apply: true, Debit: 30, BaseVersion: 1, NewBalance: 40},
				FinishResp{Applied: true, Refused: TokenRegressed}),
		},
		want: Counts{Processed: 2, TokenRegressed: 1, Applications: 2},
	},
	{
		// A declined payment (insufficient funds: Debit 0) is processed;
		// a payment no delivery applied is unprocessed.
		name:  "declined is processed; never applied is unprocessed",
		setup: bank(AccountMode, true, []int64{50, 50}, 0, 0, 1),
		ops: []op{
			enter(EnterReq{LockKey: "a0", Payment: 0, Account: 0}, EnterResp{Balance: 50}),
			finish(FinishReq{LockKey: "a0", Payment: 0, Account: 0, Apply: true, Debit: 30, NewBalance: 20}, applied),
			enter(EnterReq{LockKey: "a0", Payment: 1, Account: 0}, EnterResp{Balance: 20, Version: 1}),
			finish(FinishReq{LockKey: "a0", Payment: 1, Account: 0, Apply: true, BaseVersion: 1, NewBalance: 20}, applied),
			enter(EnterReq{LockKey: "a1", Payment: 2, Account: 1}, EnterResp{Balance: 50}),
			finish(FinishReq{LockKey: "a1", Payment: 2, Account: 1}, left),
		},
		want: Counts{Processed: 2, Unprocessed: 1, Applications: 2},
	},
	{
		// Calls the store cannot judge fail and leave no trace: the
		// failed Enter left no holder inside a0, so the next one is no
		// overlap, and the failed Finishes left that holder inside. A
		// write from a version the record has not reached (no holder
		// read it) is one of them.
		name:  "calls the store cannot judge are refused",
		setup: bank(AccountMode, true, []int64{100, 100}, 0, 1),
		ops: []op{
			finishFails(FinishReq{LockKey: "a0", Payment: 0, Account: 0, Apply: true, NewBalance: 70}, "store: Finish without Enter"),
			enterFails(EnterReq{LockKey: "a0", Payment: 7, Account: 0}, "store: unknown payment or account"),
			enterFails(EnterReq{LockKey: "a0", Payment: -1, Account: 0}, "store: unknown payment or account"),
			enterFails(EnterReq{LockKey: "a0", Payment: 1, Account: 0}, "store: unknown payment or account"),
			enter(EnterReq{LockKey: "a0", Token: 1, Payment: 0, Account: 0}, EnterResp{Balance: 100}),
			finishFails(FinishReq{LockKey: "a0", Token: 1, Payment: 1, Account: 0, Apply: true}, "store: unknown payment or account"),
			finishFails(FinishReq{LockKey: "a0", Token: 1, Payment: 0, Account: 0, Apply: true, BaseVersion: -1}, "store: negative BaseVersion"),
			finishFails(FinishReq{LockKey: "a0", Token: 1, Payment: 0, Account: 0, Apply: true, BaseVersion: 1}, "store: BaseVersion ahead of the record"),
			finish(FinishReq{LockKey: "a0", Token: 1, Payment: 0, Account: 0, Apply: true, Debit: 30, NewBalance: 70}, applied),
			finishFails(FinishReq{LockKey: "a0", Token: 1, Payment: 0, Account: 0}, "store: Finish without Enter"),
		},
		want: Counts{Processed: 1, Unprocessed: 1, Applications: 1},
	},
}

// TestStoreCases runs every scripted case against every store and checks
// each answer and every field of the verdict.
func TestStoreCases(t *testing.T) {
	for _, s := range stores(t) {
		t.Run(s.name, func(t *testing.T) {
			for _, c := range storeCases {
				t.Run(c.name, func(t *testing.T) {
					ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
					defer cancel()
					if err := s.s.Reset(ctx, c.setup); err != nil {
						t.Fatalf("Reset: %v", err)
					}
					h := holders{}
					for i, o := range c.ops {
						o.run(ctx, t, i, s.s, h)
					}
					checkCounts(ctx, t, s.s, c.want)
				})
			}
		})
	}
}

func checkCounts(ctx context.Context, t *testing.T, s Store, want Counts) {
	t.Helper()
	got, err := s.Counts(ctx)
	if err != nil {
		t.Fatalf("Counts: %v", err)
	}
	// The window of exposure is a time: it must be there exactly when an
	// overlap was, and is compared apart from the counts.
	if (got.Overlaps > 0) != (got.OverlapNs > 0) || got.OverlapMaxNs > got.OverlapNs || (got.Overlaps > 0) != (got.OverlapMaxNs > 0) {
		t.Errorf("Counts: overlaps %d but overlap_ns %d, overlap_max_ns %d; want both > 0 (max ≤ total) exactly when overlaps > 0",
			got.Overlaps, got.OverlapNs, got.OverlapMaxNs)
	}
	got.OverlapNs, got.OverlapMaxNs = 0, 0
	if got != want {
		t.Errorf("Counts: got %+v; want %+v", got, want)
	}
}

// TestStoreResetRejects checks that a setup the store could not judge is
// refused by every store.
func TestStoreResetRejects(t *testing.T) {
	cases := []struct {
		name  string
		setup Setup
		err   string
	}{
		// PaymentAccount must cover every payment.
		{"short PaymentAccount", Setup{Balances: []int64{1}, Payments: 2, PaymentAccount: []int32{0}},
			"store: PaymentAccount must have one entry per payment"},
		// A payment of an account that does not exist.
		{"account outside Balances", Setup{Balances: []int64{1}, Payments: 1, PaymentAccount: []int32{1}},
			"store: PaymentAccount names an account outside Balances"},
		// Neither AccountMode nor PaymentMode.
		{"unknown mode", Setup{Mode: 9, Balances: []int64{1}, Payments: 1, PaymentAccount: []int32{0}},
			"store: unknown mode"},
	}
	for _, s := range stores(t) {
		for _, c := range cases {
			err := s.s.Reset(context.Background(), c.setup)
			if err == nil || err.Error() != c.err {
				t.Errorf("%s: %s: Reset: got %v; want %q", s.name, c.name, err, c.err)
			}
		}
	}
}

// TestStoreConcurrentOverlap lets holders pile into the same keys at once:
// every holder of a key enters (in token order, so that tokens follow
// entry order, keys at once) before any of them finishes, then they all
// finish together in whatever order the scheduler picks. The verdict does
// not depend on that order, so it pins that each store judges every call
// atomically: a torn read-modify-write in the store would miscount.
func TestStoreConcurrentOverlap(t *testing.T) {
	const (
		keys    = 4  // accounts, one lock key each
		holders = 16 // holders per key, tokens 1..holders
		balance = 1000
	)
	n := keys * holders
	for _, s := range stores(t) {
		for _, fencing := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/fencing=%v", s.name, fencing), func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
				defer cancel()
				setup := Setup{Mode: AccountMode, Fencing: fencing, Balances: make([]int64, keys),
					Payments: n, PaymentAccount: make([]int32, n)}
				for a := range keys {
					setup.Balances[a] = balance
				}
				for p := range n {
					setup.PaymentAccount[p] = int32(p / holders)
				}
				if err := s.s.Reset(ctx, setup); err != nil {
					t.Fatalf("Reset: %v", err)
				}
				var entered, finished sync.WaitGroup
				entered.Add(n)
				in := make([]chan struct{}, n) // closed once payment p's holder entered
				for p := range in {
					in[p] = make(chan struct{})
				}
				for p := range n {
					finished.Go(func() {
						acct, token := int32(p/holders), int64(p%holders+1)
						key := fmt.Sprintf("a%d", acct)
						if token > 1 {
							<-in[p-1]
						}
						read, err := s.s.Enter(ctx, EnterReq{LockKey: key, Token: token, Payment: int64(p), Account: acct})
						close(in[p])
						entered.Done()
						if err != nil {
							t.Errorf("payment %d: Enter: %v", p, err)
							return
						}
						if read.Entry != token {
							t.Errorf("payment %d: Enter: entry %d; want %d (its token)", p, read.Entry, token)
						}
						read.Entry = 0
						if want := (EnterResp{Balance: balance}); read != want {
							t.Errorf("payment %d: Enter: got %+v; want %+v", p, read, want)
						}
						entered.Wait()
						got, err := s.s.Finish(ctx, FinishReq{LockKey: key, Token: token, Payment: int64(p), Account: acct,
							Apply: true, Debit: 1, NewBalance: balance - 1, Entry: token})
						if err != nil {
							t.Errorf("payment %d: Finish: %v", p, err)
							return
						}
						// Every token below the newest is stale once all
						// have entered.
						want := applied
						if fencing && token < holders {
							want = rejected
						}
						if token < holders {
							want.Refused = Stale // superseded: a later holder entered
						}
						if got != want {
							t.Errorf("payment %d token %d: Finish: got %+v; want %+v", p, token, got, want)
						}
					})
				}
				finished.Wait()
				want := Counts{
					Processed:     keys,
					Unprocessed:   keys * (holders - 1),
					Overlaps:      keys * (holders - 1),
					StaleRejected: keys * (holders - 1),
					Applications:  keys,
				}
				if !fencing {
					// All write from version 0: whatever the order, the
					// last write's record holds its own payment only,
					// and every other debit of the key is missing once.
					want = Counts{
						Processed:     keys * holders,
						Lost:          keys * (holders - 1),
						LostUpdates:   keys * (holders - 1),
						Overlaps:      keys * (holders - 1),
						StaleAccepted: keys * (holders - 1),
						Applications:  keys * holders,
					}
				}
				checkCounts(ctx, t, s.s, want)
			})
		}
	}
}

// TestStoreConcurrentLocked hammers the store from many workers guarded by
// a correct lock (a mutex per account), every payment delivered twice: the
// store must find nothing wrong, and every debit must be in the balances.
func TestStoreConcurrentLocked(t *testing.T) {
	const (
		accounts   = 8
		payments   = 240
		deliveries = 2
		workers    = 32
		balance    = 1_000_000
	)
	amount := func(p int) int64 { return int64(p%7 + 1) }
	for _, s := range stores(t) {
		t.Run(s.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
			defer cancel()
			setup := Setup{Mode: AccountMode, Fencing: true, Balances: make([]int64, accounts),
				Payments: payments, PaymentAccount: make([]int32, payments)}
			want := make([]int64, accounts)
			for a := range accounts {
				setup.Balances[a], want[a] = balance, balance
			}
			for p := range payments {
				setup.PaymentAccount[p] = int32(p % accounts)
				want[p%accounts] -= amount(p)
			}
			if err := s.s.Reset(ctx, setup); err != nil {
				t.Fatalf("Reset: %v", err)
			}
			var locks [accounts]sync.Mutex
			var tokens [accounts]int64 // guarded by locks
			work := make(chan int)
			var wg sync.WaitGroup
			for range workers {
				wg.Go(func() {
					for p := range work {
						acct := int32(p % accounts)
						key := fmt.Sprintf("a%d", acct)
						locks[acct].Lock()
						tokens[acct]++
						tok := tokens[acct]
						err := process(ctx, s.s, key, tok, int64(p), acct, amount(p))
						locks[acct].Unlock()
						if err != nil {
							t.Errorf("payment %d: %v", p, err)
						}
					}
				})
			}
			for d := range deliveries * payments {
				work <- d % payments
			}
			close(work)
			wg.Wait()
			checkCounts(ctx, t, s.s, Counts{Processed: payments, Applications: payments})
			for a := range int32(accounts) {
				// Account a's first payment is a itself.
				got, err := s.s.Enter(ctx, EnterReq{LockKey: "check", Payment: int64(a), Account: a})
				if err != nil {
					t.Fatal(err)
				}
				if got.Balance != want[a] || got.Version != payments/accounts {
					t.Errorf("account %d: got balance %d version %d; want %d, %d",
						a, got.Balance, got.Version, want[a], payments/accounts)
				}
				if _, err := s.s.Finish(ctx, FinishReq{LockKey: "check", Payment: int64(a), Account: a}); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// process is one delivery as a worker does it: read, and when the payment
// is not processed, write the new balance based on the read.
func process(ctx context.Context, s Accessor, key string, token, p int64, acct int32, amount int64) error {
	read, err := s.Enter(ctx, EnterReq{LockKey: key, Token: token, Payment: p, Account: acct})
	if err != nil {
		return err
	}
	r := FinishReq{LockKey: key, Token: token, Payment: p, Account: acct, Entry: read.Entry}
	if !read.Processed {
		r.Apply, r.BaseVersion, r.NewBalance = true, read.Version, read.Balance
		if read.Balance >= amount {
			r.Debit, r.NewBalance = amount, read.Balance-amount
		}
	}
	got, err := s.Finish(ctx, r)
	if err != nil {
		return err
	}
	if got.Applied != r.Apply || got.StaleRejected {
		return fmt.Errorf("Finish(%+v): got %+v", r, got)
	}
	return nil
}

// TestStoreConcurrentUnlocked runs deliveries with no lock at all in
// payment mode. What is counted depends on timing, but the bookkeeping
// must agree with itself: the atomic debit loses nothing, every holder
// left (a later Enter is no overlap), and the counts add up.
func TestStoreConcurrentUnlocked(t *testing.T) {
	const (
		accounts   = 4
		payments   = 120
		deliveries = 3
		balance    = 1_000_000
	)
	for _, s := range stores(t) {
		t.Run(s.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
			defer cancel()
			setup := Setup{Mode: PaymentMode, Balances: make([]int64, accounts),
				Payments: payments, PaymentAccount: make([]int32, payments)}
			for a := range accounts {
				setup.Balances[a] = balance
			}
			for p := range payments {
				setup.PaymentAccount[p] = int32(p % accounts)
			}
			if err := s.s.Reset(ctx, setup); err != nil {
				t.Fatalf("Reset: %v", err)
			}
			var wg sync.WaitGroup
			for p := range payments {
				for range deliveries {
					wg.Go(func() {
						acct := int32(p % accounts)
						if err := process(ctx, s.s, fmt.Sprintf("p%d", p), 0, int64(p), acct, 1); err != nil {
							t.Errorf("payment %d: %v", p, err)
						}
					})
				}
			}
			wg.Wait()
			got, err := s.s.Counts(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if got.Processed != payments || got.Unprocessed != 0 {
				t.Errorf("got processed %d unprocessed %d; want %d, 0", got.Processed, got.Unprocessed, payments)
			}
			if got.Duplicates != got.Applications-got.Processed {
				t.Errorf("got duplicates %d; want applications %d - processed %d", got.Duplicates, got.Applications, got.Processed)
			}
			// Stale writes (a holder superseded before it wrote) are
			// timing; without fencing none is refused.
			if got.Lost != 0 || got.LostUpdates != 0 || got.Overdrafts != 0 || got.StaleRejected != 0 || got.StaleAccepted > got.Applications {
				t.Errorf("got %+v; want no lost, lost updates, overdrafts or refused writes", got)
			}
			var sum int64
			for a := range int32(accounts) {
				read, err := s.s.Enter(ctx, EnterReq{LockKey: fmt.Sprintf("p%d", a), Payment: int64(a), Account: a})
				if err != nil {
					t.Fatal(err)
				}
				if _, err := s.s.Finish(ctx, FinishReq{LockKey: fmt.Sprintf("p%d", a), Payment: int64(a), Account: a}); err != nil {
					t.Fatal(err)
				}
				sum += balance - read.Balance
			}
			if sum != got.Applications {
				t.Errorf("got %d debited; want one per application, %d", sum, got.Applications)
			}
			after, err := s.s.Counts(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if after.Overlaps != got.Overlaps {
				t.Errorf("got overlaps %d after the holders left; want %d: a holder is still inside", after.Overlaps, got.Overlaps)
			}
		})
	}
}

// TestStoreOffer runs a bank whose payments are announced as they are
// offered (Offerer), as a run's are: every store takes the batches in
// order, judges their payments as it would listed ones, and counts what
// was offered and never applied as unprocessed.
func TestStoreOffer(t *testing.T) {
	for _, s := range stores(t) {
		t.Run(s.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
			defer cancel()
			if err := s.s.Reset(ctx, Setup{Mode: AccountMode, Fencing: true, Balances: []int64{100, 100}, Deliveries: 1}); err != nil {
				t.Fatalf("Reset: %v", err)
			}
			o, ok := s.s.(Offerer)
			if !ok {
				t.Fatalf("%T is no Offerer", s.s)
			}
			for _, b := range []struct {
				first    int64
				accounts []int32
			}{{0, []int32{0, 1, 0}}, {3, []int32{1}}} {
				if err := o.Offer(ctx, b.first, b.accounts); err != nil {
					t.Fatalf("Offer(%d, %v): %v", b.first, b.accounts, err)
				}
			}
			for i, q := range []struct {
				p int64
				a int32
			}{{0, 0}, {2, 0}, {3, 1}} {
				if err := process(ctx, s.s, fmt.Sprintf("a%d", q.a), int64(i+1), q.p, q.a, 10); err != nil {
					t.Fatalf("payment %d: %v", q.p, err)
				}
			}
			checkCounts(ctx, t, s.s, Counts{Processed: 3, Unprocessed: 1, Applications: 3})
			if m, ok := s.s.(interface{ Tracked() int }); ok {
				if got := m.Tracked(); got != 0 {
					t.Errorf("Tracked() = %d after every payment's one delivery; want 0", got)
				}
			}
		})
	}
}

// Memory refuses batches out of order and Offer on a listed bank: its
// unprocessed count is the payments offered.
func TestMemoryOfferRefuses(t *testing.T) {
	ctx := context.Background()
	m := NewMemory()
	if err := m.Reset(ctx, Setup{Balances: []int64{1}}); err != nil {
		t.Fatal(err)
	}
	if err := m.Offer(ctx, 1, []int32{0}); err != errOfferOrder {
		t.Errorf("Offer(1, …) first: got %v; want %v", err, errOfferOrder)
	}
	if err := m.Offer(ctx, 0, []int32{1}); err != errUnknownPayment {
		t.Errorf("Offer of account 1 of 1: got %v; want %v", err, errUnknownPayment)
	}
	if err := m.Reset(ctx, bank(AccountMode, false, []int64{1}, 0)); err != nil {
		t.Fatal(err)
	}
	if err := m.Offer(ctx, 1, []int32{0}); err != errOfferListed {
		t.Errorf("Offer on a listed bank: got %v; want %v", err, errOfferListed)
	}
}

// A write from a version older than any holder in flight read is refused
// by Memory, which no longer has it; the holder stays inside.
func TestMemoryRefusesReleasedBase(t *testing.T) {
	ctx := context.Background()
	m := NewMemory()
	if err := m.Reset(ctx, bank(AccountMode, false, []int64{100}, 0, 0)); err != nil {
		t.Fatal(err)
	}
	if err := process(ctx, m, "a0", 0, 0, 0, 10); err != nil {
		t.Fatal(err)
	}
	read, err := m.Enter(ctx, EnterReq{LockKey: "a0", Payment: 1, Account: 0})
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.Finish(ctx, FinishReq{LockKey: "a0", Payment: 1, Account: 0, Apply: true, BaseVersion: 0, NewBalance: 90, Entry: read.Entry})
	if err != errBaseReleased {
		t.Errorf("Finish from version 0 after the account was left at 1: got %v; want %v", err, errBaseReleased)
	}
	if _, err := m.Finish(ctx, FinishReq{LockKey: "a0", Payment: 1, Account: 0, Apply: true, BaseVersion: 1, NewBalance: 80, Debit: 10, Entry: read.Entry}); err != nil {
		t.Errorf("Finish from version 1: %v; want it applied (the holder was still inside)", err)
	}
}
