package faults

import (
	"sync"
	"sync/atomic"
	"testing"
)

// A trap knows each payment's first Enter exactly while the payments fit
// its slots, from many goroutines at once, and beyond them (an open-ended
// run) still never calls a later Enter of a payment its first.
func TestTrapFirst(t *testing.T) {
	tr := &trap{entered: make([]atomic.Int64, 64)}
	var firsts atomic.Int64
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p := range int64(64) {
				if tr.first(p) {
					firsts.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if got := firsts.Load(); got != 64 {
		t.Fatalf("64 payments entered by 4 goroutines each: %d firsts; want 64", got)
	}
	// Payment 64+5 takes payment 5's slot: it is first, and payment 5,
	// entered again, is not.
	if !tr.first(69) {
		t.Error("payment 69's first Enter (slot of payment 5): not first")
	}
	if tr.first(69) || tr.first(5) {
		t.Error("a second Enter of payment 69, or a later one of payment 5: counted first")
	}
	if tr.first(-1) {
		t.Error("a negative payment counted first")
	}
}
