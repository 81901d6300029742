package loadgen

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/lockbench/lockbench/loadgen/store"
	_ "github.com/lockbench/lockbench/strategies/mutex"
	_ "github.com/lockbench/lockbench/strategies/nolock"
)

func TestMain(m *testing.M) {
	MaybeRunChild()
	os.Exit(m.Run())
}

func quick(name string, mut func(*Scenario)) (Options, Scenario) {
	sc := DefaultScenario()
	sc.Payments = 600
	sc.Hold, _ = ParseHold("200us")
	mut(&sc)
	return Options{Strategy: name, Scenario: sc, Store: store.NewMemory()}, sc
}

// The checker must catch a missing lock every time: nolock with duplicate
// deliveries always shows duplicates, and without duplicates concurrent
// read-modify-writes of one account show lost updates.
func TestCheckerCatchesNoLock(t *testing.T) {
	for _, mode := range []string{"goroutine", "process"} {
		t.Run(mode, func(t *testing.T) {
			o, _ := quick("nolock", func(s *Scenario) { s.InstanceMode = mode })
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			r, err := Run(ctx, o)
			if err != nil {
				t.Fatal(err)
			}
			s := r.Summary
			if !s.Unsafe || s.Duplicates == 0 {
				t.Errorf("nolock %s: unsafe=%v duplicates=%d; want unsafe with duplicates > 0", mode, s.Unsafe, s.Duplicates)
			}
			if s.Payments != 600 || s.Processed != 600 {
				t.Errorf("payments=%d processed=%d; want 600 and 600", s.Payments, s.Processed)
			}
			if got := s.Latency["total"].Count; got == 0 {
				t.Errorf("total latency count = 0; want > 0")
			}
			t.Logf("%s: dup=%d lost=%d lostupd=%d overlaps=%d pay/s=%.0f p99=%v", mode, s.Duplicates, s.Lost, s.LostUpdates, s.Overlaps, s.PaymentsPerSec, time.Duration(s.Latency["total"].P99))
		})
	}
}

// Within one instance, mutex excludes its workers: no lost updates, while
// nolock loses them.
func TestMutexOneInstance(t *testing.T) {
	for _, tc := range []struct {
		strategy string
		unsafe   bool
	}{
		{"nolock", true}, // workers of one instance race on 5 accounts
		{"mutex", false}, // the in-process lock is enough for one instance
	} {
		t.Run(tc.strategy, func(t *testing.T) {
			o, _ := quick(tc.strategy, func(s *Scenario) { s.Instances, s.Deliveries, s.Accounts = 1, 1, 5 })
			r, err := Run(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			if got := r.Summary.Unsafe; got != tc.unsafe {
				t.Errorf("unsafe = %v (lost updates %d, duplicates %d); want %v", got, r.Summary.LostUpdates, r.Summary.Duplicates, tc.unsafe)
			}
		})
	}
}

// Two requests for one payment on one server (a monolith): each
// payment is delivered to two workers of the single instance, at the same
// time. The in-process mutex excludes them; nolock processes the payment
// twice. Both instance modes route the copies to distinct workers.
func TestMonolithTwoDeliveries(t *testing.T) {
	for _, mode := range []string{"goroutine", "process"} {
		for _, tc := range []struct {
			strategy string
			unsafe   bool
		}{
			{"nolock", true},
			{"mutex", false},
		} {
			t.Run(mode+"/"+tc.strategy, func(t *testing.T) {
				o, _ := quick(tc.strategy, func(s *Scenario) {
					s.Instances, s.Deliveries, s.Workers, s.InstanceMode = 1, 2, 4, mode
				})
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				defer cancel()
				r, err := Run(ctx, o)
				if err != nil {
					t.Fatal(err)
				}
				s := r.Summary
				if s.Unsafe != tc.unsafe {
					t.Errorf("unsafe = %v (duplicates %d, lost updates %d); want %v", s.Unsafe, s.Duplicates, s.LostUpdates, tc.unsafe)
				}
				if tc.unsafe && s.Duplicates == 0 {
					t.Errorf("duplicates = 0; want the two copies caught processing one payment twice")
				}
				if s.Processed != s.Payments {
					t.Errorf("processed %d of %d payments; want all", s.Processed, s.Payments)
				}
			})
		}
	}
}
