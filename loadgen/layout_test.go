package loadgen

import (
	"context"
	"testing"
	"time"
	"unsafe"

	"github.com/lockbench/lockbench/internal/cacheline"
	"github.com/lockbench/lockbench/results"
)

// f is the place of a field of size bytes at offset off.
func f(off, size uintptr) cacheline.Field { return cacheline.Field{Off: off, Size: size} }

// What a refill writes (the lock, the cursor, the offered and measured
// counts) is one cache line, the feed's first: the workers of the two
// cores of a small machine move one line between them a refill.
func TestFeedHotLine(t *testing.T) {
	var fd feed
	cacheline.Lines(t, "feed", unsafe.Sizeof(fd))
	cacheline.Within(t, "feed", 0, 64, map[string]cacheline.Field{
		"mu":     f(unsafe.Offsetof(fd.mu), unsafe.Sizeof(fd.mu)),
		"next":   f(unsafe.Offsetof(fd.next), unsafe.Sizeof(fd.next)),
		"cur":    f(unsafe.Offsetof(fd.cur), unsafe.Sizeof(fd.cur)),
		"offers": f(unsafe.Offsetof(fd.offers), unsafe.Sizeof(fd.offers)),
	})
	// What every take reads, on a line no refill writes.
	cacheline.Within(t, "feed", 64, 128, map[string]cacheline.Field{
		"halt": f(unsafe.Offsetof(fd.halt), unsafe.Sizeof(fd.halt)),
	})
	for range 3 {
		feedSink = newFeed() // on the heap, as a run's
		cacheline.Aligned(t, "a new feed", unsafe.Pointer(feedSink))
	}
}

// What a lock cycle touches of its worker is two cache lines: the first
// holds the instance, the call contexts, the random source and the
// recorder's head; the second the three counters a cycle adds to.
func TestWorkerHotLines(t *testing.T) {
	var w worker
	cacheline.Lines(t, "worker", unsafe.Sizeof(w))
	cacheline.Within(t, "worker", 0, 64, map[string]cacheline.Field{
		"inst":  f(unsafe.Offsetof(w.inst), unsafe.Sizeof(w.inst)),
		"calls": f(unsafe.Offsetof(w.calls), unsafe.Sizeof(w.calls)),
		"rng":   f(unsafe.Offsetof(w.rng), unsafe.Sizeof(w.rng)),
		"rec":   f(unsafe.Offsetof(w.rec), results.RecorderHead), // its head
	})
	c := unsafe.Offsetof(w.c)
	cacheline.Within(t, "worker", 64, 128, map[string]cacheline.Field{
		"c.Deliveries": f(c+unsafe.Offsetof(w.c.Deliveries), 8),
		"c.Acquired":   f(c+unsafe.Offsetof(w.c.Acquired), 8),
		"c.Measured":   f(c+unsafe.Offsetof(w.c.Measured), 8),
	})
	for range 3 {
		workerSink = newWorker(nil, nil) // on the heap, as a run's
		cacheline.Aligned(t, "a new worker", unsafe.Pointer(workerSink))
	}
}

// A call's begin and end touch one line of its deadlines and one of the
// worker's two call contexts.
func TestDeadlinesHotLine(t *testing.T) {
	var d deadlines
	cacheline.Lines(t, "deadlines", unsafe.Sizeof(d))
	cacheline.Within(t, "deadlines", 0, 64, map[string]cacheline.Field{
		"timeout":        f(unsafe.Offsetof(d.timeout), unsafe.Sizeof(d.timeout)),
		"parentDeadline": f(unsafe.Offsetof(d.parentDeadline), unsafe.Sizeof(d.parentDeadline)),
		"parentDone":     f(unsafe.Offsetof(d.parentDone), unsafe.Sizeof(d.parentDone)),
		"cur":            f(unsafe.Offsetof(d.cur), unsafe.Sizeof(d.cur)),
		"keepDone":       f(unsafe.Offsetof(d.keepDone), unsafe.Sizeof(d.keepDone)),
		"flags":          f(unsafe.Offsetof(d.flags), unsafe.Sizeof(d.flags)),
		"epoch":          f(unsafe.Offsetof(d.epoch), unsafe.Sizeof(d.epoch)),
	})
	if got := unsafe.Sizeof(callCtx{}); got != cacheline.Size {
		t.Errorf("unsafe.Sizeof(callCtx{}) = %d; want %d, a cache line", got, cacheline.Size)
	}
	for range 3 {
		deadlinesSink = newDeadlines(context.Background(), time.Second, time.Now())
		callsSink = new([2]callCtx)
		cacheline.Aligned(t, "a new deadlines", unsafe.Pointer(deadlinesSink))
		cacheline.Aligned(t, "a new [2]callCtx", unsafe.Pointer(callsSink))
		deadlinesSink.close()
	}
}

var (
	feedSink      *feed
	workerSink    *worker
	deadlinesSink *deadlines
	callsSink     *[2]callCtx
)
