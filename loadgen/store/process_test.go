package store

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// Process with the processed marker's unique constraint processes each
// payment once however many deliveries race for it, in both modes; the
// same transaction without the constraint (the control) is caught
// processing the payments twice. Each delivery stays inside its open
// transaction for a moment, so that every pair really overlaps.
func TestPostgresProcessExcludesDuplicates(t *testing.T) {
	const payments, deliveries = 20, 2
	for _, tc := range []struct {
		name      string
		mode      Mode
		unguarded bool
		wantDups  int64
	}{
		{"account-mode", AccountMode, false, 0},
		{"payment-mode", PaymentMode, false, 0},
		// The control: the check must catch a transaction that does not
		// exclude its duplicates, or the zero above means nothing.
		{"unguarded-control", AccountMode, true, payments * (deliveries - 1)},
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
			errs := make(chan error, payments*deliveries)
			for i := range payments {
				for range deliveries {
					wg.Go(func() {
						_, err := p.Process(ctx, TxReq{Payment: int64(i), Account: accounts[i], Amount: 10, Unguarded: tc.unguarded},
							func(context.Context) error { time.Sleep(20 * time.Millisecond); return nil })
						errs <- err
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
			if c.Duplicates != tc.wantDups || c.Processed != payments || c.Overdrafts != 0 || c.Lost != 0 || c.LostUpdates != 0 {
				t.Errorf("Counts: got duplicates %d, processed %d, overdrafts %d, lost %d, lost updates %d; want duplicates %d, processed %d, and no others",
					c.Duplicates, c.Processed, c.Overdrafts, c.Lost, c.LostUpdates, tc.wantDups, payments)
			}
			var sum int64
			if err := p.pool.QueryRow(ctx, `SELECT sum(balance) FROM lockbench_store_accounts`).Scan(&sum); err != nil {
				t.Fatal(err)
			}
			if want := 4000 - 10*(payments+tc.wantDups); sum != want {
				t.Errorf("total balance: got %d; want %d (one debit per application)", sum, want)
			}
		})
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
