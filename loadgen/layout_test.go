package loadgen

import (
	"context"
	"testing"
	"time"
	"unsafe"

	"github.com/lockbench/lockbench/results"
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

// What a lock cycle touches of its worker is two cache lines: the first
// holds the instance, the call contexts, the random source and the
// recorder's head; the second the three counters a cycle adds to.
func TestWorkerHotLines(t *testing.T) {
	var w worker
	if got := unsafe.Sizeof(w); got%64 != 0 || got > 512 {
		t.Errorf("unsafe.Sizeof(worker{}) = %d; want a multiple of 64, at most 512 (no allocation header)", got)
	}
	for name, span := range map[string][2]uintptr{
		"inst":     {unsafe.Offsetof(w.inst), unsafe.Sizeof(w.inst)},
		"calls":    {unsafe.Offsetof(w.calls), unsafe.Sizeof(w.calls)},
		"rng":      {unsafe.Offsetof(w.rng), unsafe.Sizeof(w.rng)},
		"rec head": {unsafe.Offsetof(w.rec), results.RecorderHead},
	} {
		if end := span[0] + span[1]; end > 64 {
			t.Errorf("worker.%s ends at byte %d; want within the first 64", name, end)
		}
	}
	for name, off := range map[string]uintptr{
		"Deliveries": unsafe.Offsetof(w.c) + unsafe.Offsetof(w.c.Deliveries),
		"Acquired":   unsafe.Offsetof(w.c) + unsafe.Offsetof(w.c.Acquired),
		"Measured":   unsafe.Offsetof(w.c) + unsafe.Offsetof(w.c.Measured),
	} {
		if off < 64 || off+8 > 128 {
			t.Errorf("worker.c.%s at byte %d; want within the second 64", name, off)
		}
	}
	for range 3 {
		workerSink = newWorker(nil, nil) // on the heap, as a run's
		if a := uintptr(unsafe.Pointer(workerSink)); a%64 != 0 {
			t.Fatalf("a new worker at %#x; want a multiple of 64", a)
		}
	}
}

var workerSink *worker

// A call's begin and end touch one line of its deadlines and one of the
// worker's two call contexts.
func TestDeadlinesHotLine(t *testing.T) {
	var d deadlines
	if got := unsafe.Sizeof(d); got%64 != 0 || got > 512 {
		t.Errorf("unsafe.Sizeof(deadlines{}) = %d; want a multiple of 64, at most 512 (no allocation header)", got)
	}
	for name, end := range map[string]uintptr{
		"timeout":        unsafe.Offsetof(d.timeout) + unsafe.Sizeof(d.timeout),
		"parentDeadline": unsafe.Offsetof(d.parentDeadline) + unsafe.Sizeof(d.parentDeadline),
		"parentDone":     unsafe.Offsetof(d.parentDone) + unsafe.Sizeof(d.parentDone),
		"cur":            unsafe.Offsetof(d.cur) + unsafe.Sizeof(d.cur),
		"keepDone":       unsafe.Offsetof(d.keepDone) + unsafe.Sizeof(d.keepDone),
		"flags":          unsafe.Offsetof(d.flags) + unsafe.Sizeof(d.flags),
		"epoch":          unsafe.Offsetof(d.epoch) + unsafe.Sizeof(d.epoch),
	} {
		if end > 64 {
			t.Errorf("deadlines.%s ends at byte %d; want within the first 64", name, end)
		}
	}
	if got := unsafe.Sizeof(callCtx{}); got != 64 {
		t.Errorf("unsafe.Sizeof(callCtx{}) = %d; want 64, a cache line", got)
	}
	for range 3 {
		deadlinesSink = newDeadlines(context.Background(), time.Second, time.Now())
		callsSink = new([2]callCtx)
		for name, a := range map[string]uintptr{"deadlines": uintptr(unsafe.Pointer(deadlinesSink)), "[2]callCtx": uintptr(unsafe.Pointer(callsSink))} {
			if a%64 != 0 {
				t.Fatalf("a new %s at %#x; want a multiple of 64", name, a)
			}
		}
		deadlinesSink.close()
	}
}

var (
	deadlinesSink *deadlines
	callsSink     *[2]callCtx
)
