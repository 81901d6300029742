package store

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Each kind of transaction processes each payment once however many
// deliveries race for it, and the lock or check keeps the debits exact;
// the same transaction without its protection (the control: no unique
// constraint, no FOR UPDATE, no version check) is caught processing
// payments twice. Each delivery stays inside its open transaction for a
// moment, so that every pair really overlaps. An optimistic delivery whose
// version check failed tries again, as the load generator's does.
func TestPostgresProcessExcludesDuplicates(t *testing.T) {
	const payments, deliveries = 20, 2
	for _, tc := range []struct {
		name      string
		kind      TxKind
		mode      Mode
		unguarded bool
	}{
		{"unique/account-mode", TxUniqueMarker, AccountMode, false},
		{"unique/payment-mode", TxUniqueMarker, PaymentMode, false},
		{"unique/unguarded-control", TxUniqueMarker, AccountMode, true},
		{"row-lock/account-mode", TxRowLock, AccountMode, false},
		{"row-lock/payment-mode", TxRowLock, PaymentMode, false},
		{"row-lock/unguarded-control", TxRowLock, AccountMode, true},
		{"optimistic/account-mode", TxOptimistic, AccountMode, false},
		{"optimistic/payment-mode", TxOptimistic, PaymentMode, false},
		{"optimistic/unguarded-control", TxOptimistic, AccountMode, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
			defer cancel()
			p := newTestPostgres(t)
			accounts := make([]int32, payments)
			for i := range accounts {
				accounts[i] = int32(i % 4)
			}
			if err := p.Reset(ctx, bank(tc.mode, false, []int64{1000, 1000, 1000, 1000}, accounts...)); err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			var conflicts atomic.Int64
			errs := make(chan error, payments*deliveries)
			// In a control, nothing keeps a payment's deliveries apart:
			// each waits inside for the other (bounded), so that both have
			// read the payment unprocessed, whatever the scheduling.
			inside := func(context.Context) error { time.Sleep(20 * time.Millisecond); return nil }
			for i := range payments {
				var met sync.WaitGroup
				met.Add(deliveries)
				work := inside
				if tc.unguarded {
					work = func(context.Context) error {
						met.Done()
						waitBounded(&met, 5*time.Second)
						return nil
					}
				}
				for range deliveries {
					wg.Go(func() {
						for {
							r, err := p.Process(ctx, TxReq{Payment: int64(i), Account: accounts[i], Amount: 10, Kind: tc.kind, Unguarded: tc.unguarded}, work)
							if err != nil || !r.Conflict {
								errs <- err
								return
							}
							conflicts.Add(1)
						}
					})
				}
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				if err != nil {
					t.Fatalf("Process: got %v; want nil", err)
				}
			}
			c, err := p.Counts(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if tc.unguarded {
				// The control must be caught: every pair overlapped, so
				// every payment was processed twice.
				if c.Duplicates != payments || c.Processed != payments {
					t.Errorf("control: got duplicates %d, processed %d; want %d of each", c.Duplicates, c.Processed, payments)
				}
				if tc.kind != TxUniqueMarker && c.LostUpdates == 0 {
					t.Errorf("control: got no lost updates; want some (debits computed from stale reads)")
				}
				return
			}
			if c.Duplicates != 0 || c.Processed != payments || c.Overdrafts != 0 || c.Lost != 0 || c.LostUpdates != 0 {
				t.Errorf("Counts: got duplicates %d, processed %d, overdrafts %d, lost %d, lost updates %d; want processed %d and no others",
					c.Duplicates, c.Processed, c.Overdrafts, c.Lost, c.LostUpdates, payments)
			}
			if got := conflicts.Load(); (tc.kind == TxOptimistic) != (got > 0) {
				t.Errorf("conflicts: got %d; want some exactly for the optimistic transaction (10 deliveries per account race)", got)
			}
			var sum int64
			if err := p.pool.QueryRow(ctx, `SELECT sum(balance) FROM lockbench_store_accounts`).Scan(&sum); err != nil {
				t.Fatal(err)
			}
			if want := int64(4000 - 10*payments); sum != want {
				t.Errorf("total balance: got %d; want %d (one debit per payment)", sum, want)
			}
		})
	}
}

// A row lock held longer than TxReq.LockTimeout gives the waiting
// delivery ErrLockTimeout, having claimed nothing, in about the timeout.
func TestPostgresProcessLockTimeout(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	p := newTestPostgres(t)
	if err := p.Reset(ctx, bank(AccountMode, false, []int64{100}, 0)); err != nil {
		t.Fatal(err)
	}
	holder, err := p.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Rollback(context.WithoutCancel(ctx))
	if _, err := holder.Exec(ctx, `SELECT 1 FROM lockbench_store_accounts WHERE id = 0 FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	called := false
	t0 := time.Now()
	r, err := p.Process(ctx, TxReq{Payment: 0, Account: 0, Amount: 10, Kind: TxRowLock, LockTimeout: 100 * time.Millisecond},
		func(context.Context) error { called = true; return nil })
	if !errors.Is(err, ErrLockTimeout) || r.Claimed || called {
		t.Fatalf("Process on a locked row: got %+v, %v, inside called %v; want ErrLockTimeout, nothing claimed", r, err, called)
	}
	if took := time.Since(t0); took > 5*time.Second {
		t.Errorf("Process on a locked row took %v; want about its 100ms lock timeout", took)
	}
}

// A payment the account cannot cover is declined and still processed; a
// transaction whose inside fails is rolled back whole, marker included, so
// a later delivery processes the payment; a delivery that finds the marker
// claims nothing.
func TestPostgresProcessOutcomes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	p := newTestPostgres(t)
	if err := p.Reset(ctx, bank(AccountMode, false, []int64{25}, 0, 0)); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	cases := []struct {
		name    string
		req     TxReq
		inside  func(context.Context) error
		want    TxResp
		wantErr error
	}{
		// Payment 0 is covered: debited.
		{"debited", TxReq{Payment: 0, Account: 0, Amount: 20}, nil, TxResp{Claimed: true, Debited: true}, nil},
		// Its second delivery finds the marker.
		{"duplicate", TxReq{Payment: 0, Account: 0, Amount: 20}, nil, TxResp{}, nil},
		// Payment 1 fails inside: rolled back.
		{"rolled-back", TxReq{Payment: 1, Account: 0, Amount: 20}, func(context.Context) error { return boom }, TxResp{}, boom},
		// Retried, it is processed but declined: 5 left, 20 asked.
		{"declined", TxReq{Payment: 1, Account: 0, Amount: 20}, nil, TxResp{Claimed: true}, nil},
	}
	for _, tc := range cases {
		got, err := p.Process(ctx, tc.req, tc.inside)
		if !errors.Is(err, tc.wantErr) || got != tc.want {
			t.Errorf("%s: Process got %+v, %v; want %+v, %v", tc.name, got, err, tc.want, tc.wantErr)
		}
	}
	c, err := p.Counts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if c.Processed != 2 || c.Duplicates != 0 || c.Overdrafts != 0 || c.Applications != 2 {
		t.Errorf("Counts: got %+v; want 2 processed, 2 applications, no duplicates or overdrafts", c)
	}
}

// waitBounded waits for wg at most d.
func waitBounded(wg *sync.WaitGroup, d time.Duration) {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(d):
	}
}
