package loadgen

import (
	"bytes"
	"context"
	"math/rand/v2"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/lockbench/lockbench/results"
)

// A delivery survives its record unchanged, extremes included.
func TestDeliveryRecordRoundTrip(t *testing.T) {
	for _, d := range []Delivery{
		{}, // all zero
		{Payment: 1<<62 + 5, Account: -1, Amount: -7, IntendedNs: time.Now().UnixNano(), Record: true, Worker: -1},
		{Payment: 42, Account: 1<<31 - 1, Amount: 1 << 40, IntendedNs: 1, Worker: 4095},
	} {
		var b [deliverySize]byte
		putDelivery(b[:], d)
		if got := getDelivery(b[:]); got != d {
			t.Errorf("round trip: got %+v; want %+v", got, d)
		}
	}
}

// Every delivery queued before Close arrives, in order, whatever the
// batching; and a reader that stops reading makes Deliver block (back
// pressure), returning when its ctx ends.
func TestDeliveryWriter(t *testing.T) {
	var buf bytes.Buffer
	dw := newDeliveryWriter(&buf)
	const n = 5000
	for i := range n {
		if err := dw.Deliver(context.Background(), Delivery{Payment: int64(i), Worker: -1}); err != nil {
			t.Fatal(err)
		}
	}
	dw.Close()
	<-dw.Done()
	var got []int64
	if err := readDeliveries(&buf, func(d Delivery) { got = append(got, d.Payment) }); err != nil {
		t.Fatal(err)
	}
	if len(got) != n {
		t.Fatalf("got %d deliveries; want %d", len(got), n)
	}
	for i, p := range got {
		if p != int64(i) {
			t.Fatalf("delivery %d is payment %d; want %d (in order)", i, p, i)
		}
	}

	// A pipe nobody reads: the queue fills and Deliver blocks.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	dw = newDeliveryWriter(w)
	defer dw.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	var blocked error
	for i := 0; i < 1_000_000 && blocked == nil; i++ {
		blocked = dw.Deliver(ctx, Delivery{Payment: int64(i)})
	}
	if blocked != context.DeadlineExceeded {
		t.Errorf("Deliver to a reader that never reads: got %v; want context.DeadlineExceeded", blocked)
	}
}

// A histogram sent as its non-zero buckets arrives whole: the same count
// and percentiles.
func TestSparseHistRoundTrip(t *testing.T) {
	h := results.NewHistogram()
	for i := int64(1); i <= 5000; i++ {
		_ = h.RecordValue(i * i * 37)
	}
	got := results.NewHistogram()
	sparseOf(h).mergeInto(got)
	sparseOf(results.NewHistogram()).mergeInto(got) // an empty one adds nothing
	for _, q := range []float64{50, 99, 99.9, 100} {
		if a, b := got.ValueAtQuantile(q), h.ValueAtQuantile(q); a != b {
			t.Errorf("p%v: got %d; want %d", q, a, b)
		}
	}
	if got.TotalCount() != h.TotalCount() {
		t.Errorf("count: got %d; want %d", got.TotalCount(), h.TotalCount())
	}
	// Bucket for bucket: the merged histogram's snapshot is the sent one's,
	// and the same as the long way's (a whole snapshot merged), for values
	// across the whole range.
	h = results.NewHistogram()
	rnd := rand.New(rand.NewPCG(3, 9))
	for range 20000 {
		_ = h.RecordValue(results.MinLatencyNs + rnd.Int64N(1<<uint(rnd.IntN(36)+1)))
	}
	_ = h.RecordValues(results.MaxLatencyNs, 3)
	fast, slow := results.NewHistogram(), results.NewHistogram()
	sparseOf(h).mergeInto(fast)
	sparseOf(h).mergeSnapshot(slow)
	if want := h.Export().Counts; !slices.Equal(fast.Export().Counts, want) || !slices.Equal(slow.Export().Counts, want) {
		t.Error("merged snapshots differ from the sent histogram's")
	}
	if len(bucketValues()) == 0 {
		t.Error("no bucket values")
	}
}
