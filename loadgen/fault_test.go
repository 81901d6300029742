package loadgen

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockbench/lockbench/loadgen/store"
)

// hookedStore hands a slow order (FaultEnv.SlowNext) to the next
// successful waiting Enter of its instance, exactly once: given from
// inside a hook, to the very Enter the hook caught.
func TestHookedStoreSlow(t *testing.T) {
	const d = 2500 * time.Millisecond
	ctx := context.Background()
	m := store.NewMemory()
	if err := m.Reset(ctx, store.Setup{Balances: []int64{100}, Payments: 8, PaymentAccount: make([]int32, 8)}); err != nil {
		t.Fatal(err)
	}
	env := &FaultEnv{slows: make([]atomic.Int64, 2)}
	var caught atomic.Bool
	env.OnEnter(func(r store.EnterReq) {
		// Catch instance 1's first Enter, as the slow fault's trap does.
		if r.Instance == 1 && caught.CompareAndSwap(false, true) {
			env.SlowNext(r.Instance, d)
		}
	})
	st := hookedStore{Store: m, env: env}
	for i, tc := range []struct {
		instance int
		payment  int64
		before   func() // an order given before this Enter, or nil
		oneWay   bool   // a one-way Enter (store.EnterReq.Waiting false)
		wantErr  bool
		want     time.Duration
	}{
		// Instance 0 enters: nobody ordered it slowed.
		{instance: 0, payment: 0},
		// Instance 1's first Enter is caught by the hook: slowed.
		{instance: 1, payment: 1, want: d},
		// Its next Enter is not: the order was taken.
		{instance: 1, payment: 2},
		// An order for instance 0 given outside the hooks...
		{instance: 0, payment: 3, before: func() { env.SlowNext(0, d) }, want: d},
		// ...is taken once too.
		{instance: 0, payment: 4},
		// An Enter that fails (an unknown payment) does no work and leaves
		// the order for the next one.
		{instance: 0, payment: 99, before: func() { env.SlowNext(0, d) }, wantErr: true},
		{instance: 0, payment: 5, want: d},
		// A one-way Enter's answer reaches nobody: it leaves the order
		// for the instance's next waiting Enter.
		{instance: 0, payment: 6, before: func() { env.SlowNext(0, d) }, oneWay: true},
		{instance: 0, payment: 7, want: d},
		// An order for an instance the run does not have is ignored.
		{instance: 1, payment: 3, before: func() { env.SlowNext(2, d); env.SlowNext(-1, d) }},
	} {
		if tc.before != nil {
			tc.before()
		}
		key := fmt.Sprintf("k%d", tc.payment)
		resp, err := st.Enter(ctx, store.EnterReq{LockKey: key, Payment: tc.payment, Instance: tc.instance, Waiting: !tc.oneWay})
		if tc.wantErr {
			if err == nil {
				t.Errorf("%d: Enter of unknown payment %d: got nil; want an error", i, tc.payment)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%d: Enter: %v", i, err)
		}
		if resp.Slow != tc.want {
			t.Errorf("%d: instance %d, payment %d: Slow %s; want %s", i, tc.instance, tc.payment, resp.Slow, tc.want)
		}
		if _, err := st.Finish(ctx, store.FinishReq{LockKey: key, Payment: tc.payment}); err != nil {
			t.Fatalf("%d: Finish: %v", i, err)
		}
	}
}
