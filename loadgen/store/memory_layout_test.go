package store

import (
	"testing"
	"unsafe"
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
	if got := unsafe.Sizeof(sh); got%64 != 0 {
		t.Errorf("unsafe.Sizeof(shard{}) = %d; want a multiple of 64", got)
	}
	for name, end := range map[string]uintptr{
		"mu":           unsafe.Offsetof(sh.mu) + unsafe.Sizeof(sh.mu),
		"payments":     unsafe.Offsetof(sh.payments) + unsafe.Sizeof(sh.payments),
		"applications": unsafe.Offsetof(sh.applications) + unsafe.Sizeof(sh.applications),
		"c.Processed":  unsafe.Offsetof(sh.c) + unsafe.Offsetof(sh.c.Processed) + unsafe.Sizeof(sh.c.Processed),
		"c.Duplicates": unsafe.Offsetof(sh.c) + unsafe.Offsetof(sh.c.Duplicates) + unsafe.Sizeof(sh.c.Duplicates),
	} {
		if end > 64 {
			t.Errorf("shard.%s ends at byte %d; want within the first 64", name, end)
		}
	}
	for range 3 {
		memorySink = NewMemory() // on the heap, as a run's
		m := memorySink
		for i := range m.shards {
			if a := uintptr(unsafe.Pointer(&m.shards[i])); a%64 != 0 {
				t.Fatalf("shard %d of a new Memory at %#x; want a multiple of 64", i, a)
			}
		}
	}
}

var memorySink *Memory
