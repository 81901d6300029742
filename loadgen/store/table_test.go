package store

import (
	"math/rand/v2"
	"testing"
)

// The payment table agrees with a map through random adds and removes,
// and a table whose payments come and go (a run's: ids rising, a bounded
// number at a time) stays as large as the most it held at once.
func TestPaymentTable(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var tab paymentTable
	want := map[int64]int32{}
	next := int64(0)
	for step := range 200_000 {
		switch {
		case len(want) < 100 && rng.IntN(2) == 0:
			// A new payment, or now and then an old id again.
			id := next
			if rng.IntN(10) == 0 {
				id = rng.Int64N(next + 1)
			} else {
				next++
			}
			ps := tab.add(id, int32(id%7))
			if _, ok := want[id]; !ok {
				want[id] = int32(id % 7)
				ps.applications = int32(step)
			}
		case len(want) > 0:
			// Remove one in flight, most often among the oldest.
			var id int64 = -1
			for k := range want {
				if id < 0 || k < id && rng.IntN(3) > 0 {
					id = k
				}
			}
			tab.remove(id)
			delete(want, id)
		}
		if tab.n != len(want) {
			t.Fatalf("step %d: table holds %d; want %d", step, tab.n, len(want))
		}
	}
	for id, a := range want {
		ps := tab.get(id)
		if ps == nil || ps.id != id || ps.account != a {
			t.Fatalf("get(%d) = %+v; want payment %d of account %d", id, ps, id, a)
		}
	}
	n := 0
	tab.each(func(*paymentState) { n++ })
	if n != len(want) {
		t.Errorf("each visits %d; want %d", n, len(want))
	}
	if tab.get(next+1) != nil {
		t.Errorf("get of an id never added: got a payment; want nil")
	}
	// At most 100 at once: 3/4 load, so 256 slots.
	if got := len(tab.slots); got > 256 {
		t.Errorf("after %d payments, at most 100 at once, the table has %d slots; want at most 256", next, got)
	}
}
