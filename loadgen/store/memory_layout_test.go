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
