package loadgen

import (
	"testing"
	"unsafe"
)

// What a take writes (the lock, the cursor, the offered and measured
// counts) is one cache line, the feed's first: the workers of
// the two cores of a small machine move one line between them a payment.
func TestFeedHotLine(t *testing.T) {
	var f feed
	if got := unsafe.Sizeof(f); got%64 != 0 {
		t.Errorf("unsafe.Sizeof(feed{}) = %d; want a multiple of 64", got)
	}
	for name, end := range map[string]uintptr{
		"mu":     unsafe.Offsetof(f.mu) + unsafe.Sizeof(f.mu),
		"next":   unsafe.Offsetof(f.next) + unsafe.Sizeof(f.next),
		"cur":    unsafe.Offsetof(f.cur) + unsafe.Sizeof(f.cur),
		"offers": unsafe.Offsetof(f.offers) + unsafe.Sizeof(f.offers),
	} {
		if end > 64 {
			t.Errorf("feed.%s ends at byte %d; want within the first 64", name, end)
		}
	}
	for range 3 {
		feedSink = newFeed() // on the heap, as a run's
		if a := uintptr(unsafe.Pointer(feedSink)); a%64 != 0 {
			t.Fatalf("a new feed at %#x; want a multiple of 64", a)
		}
	}
}

var feedSink *feed
