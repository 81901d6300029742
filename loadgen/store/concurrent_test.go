package store

import (
	"context"
	"fmt"
	"sync"
	"testing"
)

// TestStoreConcurrentOverlap lets holders pile into the same keys at once:
// every holder of a key enters before any of them finishes, then they all
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
				for p := range n {
					finished.Go(func() {
						acct, token := int32(p/holders), int64(p%holders+1)
						key := fmt.Sprintf("a%d", acct)
						read, err := s.s.Enter(ctx, EnterReq{LockKey: key, Token: token, Payment: int64(p), Account: acct})
						entered.Done()
						if err != nil {
							t.Errorf("payment %d: Enter: %v", p, err)
							return
						}
						if want := (EnterResp{Balance: balance}); read != want {
							t.Errorf("payment %d: Enter: got %+v; want %+v", p, read, want)
						}
						entered.Wait()
						got, err := s.s.Finish(ctx, FinishReq{LockKey: key, Token: token, Payment: int64(p), Account: acct,
							Apply: true, Debit: 1, NewBalance: balance - 1})
						if err != nil {
							t.Errorf("payment %d: Finish: %v", p, err)
							return
						}
						// Every token below the newest is stale once all
						// have entered.
						want := applied
						if token < holders {
							if fencing {
								want = rejected
							}
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
					// All write on version 0: the k-th write of a key
					// overwrites k-1, and the last one unmarks every other.
					want = Counts{
						Processed:     keys * holders,
						Lost:          keys * (holders - 1),
						LostUpdates:   keys * holders * (holders - 1) / 2,
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
	r := FinishReq{LockKey: key, Token: token, Payment: p, Account: acct}
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
	if got != (FinishResp{Applied: r.Apply}) {
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
			if got.Lost != 0 || got.LostUpdates != 0 || got.Overdrafts != 0 || got.StaleRejected != 0 || got.StaleAccepted != 0 {
				t.Errorf("got %+v; want no lost, lost updates, overdrafts or stale writes", got)
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
