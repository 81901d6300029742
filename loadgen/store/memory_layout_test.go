package store

import (
	"fmt"
	"testing"
	"unsafe"

	"github.com/lockbench/lockbench/internal/cacheline"
)

// An account and its lock state are one cache line: a lock cycle touches
// both, and a second line per cycle is a second cache miss over a large
// bank.
func TestAccountIsOneCacheLine(t *testing.T) {
	if got := unsafe.Sizeof(account{}); got != 64 {
		t.Errorf("unsafe.Sizeof(account{}) = %d; want 64", got)
	}
}

// A payment's state, with the flag that says its table slot is in use, is
// one cache line: a lookup reads the flag and then the state.
func TestPaymentStateIsOneCacheLine(t *testing.T) {
	if got := unsafe.Sizeof(paymentState{}); got != 64 {
		t.Errorf("unsafe.Sizeof(paymentState{}) = %d; want 64", got)
	}
}

// What a lock cycle writes of its shard (the mutex, the payment table's
// count, the applications, the processed and duplicates of the payment it
// finishes) is one cache line, and each shard starts one: a shard moved
// between the cores at one line a cycle.
func TestShardHotLine(t *testing.T) {
	var sh shard
	cacheline.Lines(t, "shard", unsafe.Sizeof(sh))
	c := unsafe.Offsetof(sh.c)
	cacheline.Within(t, "shard", 0, 64, map[string]cacheline.Field{
		"mu":           {Off: unsafe.Offsetof(sh.mu), Size: unsafe.Sizeof(sh.mu)},
		"payments":     {Off: unsafe.Offsetof(sh.payments), Size: unsafe.Sizeof(sh.payments)},
		"applications": {Off: unsafe.Offsetof(sh.applications), Size: unsafe.Sizeof(sh.applications)},
		"c.Processed":  {Off: c + unsafe.Offsetof(sh.c.Processed), Size: unsafe.Sizeof(sh.c.Processed)},
		"c.Duplicates": {Off: c + unsafe.Offsetof(sh.c.Duplicates), Size: unsafe.Sizeof(sh.c.Duplicates)},
	})
	for range 3 {
		memorySink = NewMemory() // on the heap, as a run's
		for i := range memorySink.shards {
			cacheline.Aligned(t, fmt.Sprintf("shard %d of a new Memory", i), unsafe.Pointer(&memorySink.shards[i]))
		}
	}
}

var memorySink *Memory
