package store

import (
	"context"
	"errors"
	"net"
	"sync/atomic"
	"testing"
	"time"
)

// arriveServe serves a fresh Memory inline over loopback TCP (as the
// agents' instances reach it) with the sync flag sync, and dials n arrival
// clients.
func arriveServe(t *testing.T, n int, sync *atomic.Bool) (*Memory, []*Client) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	m := NewMemory()
	go func() { _ = ServeWith(ln, m, ServeOptions{Inline: true, Sync: sync.Load}) }()
	t.Cleanup(func() { ln.Close() })
	return m, dialClients(t, ln.Addr().String(), n, func(c *Client) {
		c.Arrive()
		t.Cleanup(func() { c.Close() })
	})
}

// waitCounts polls m until ok accepts its counts, or fails the test.
func waitCounts(t *testing.T, m *Memory, ok func(Counts) bool) Counts {
	t.Helper()
	deadline := time.Now().Add(testTimeout)
	for {
		c, err := m.Counts(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if ok(c) || time.Now().After(deadline) {
			return c
		}
		time.Sleep(time.Millisecond)
	}
}

// Two arrival clients, each a holder of payment 0, enter (one-way) before
// either finishes: both reads are "not processed", so both writes, which
// the server computes from them, apply: an overlap and a duplicate, judged
// by the order the frames arrived in.
func TestArrivalClientsOverlap(t *testing.T) {
	var sync atomic.Bool
	m, cs := arriveServe(t, 2, &sync)
	ctx := context.Background()
	if err := m.Reset(ctx, bank(AccountMode, false, []int64{100}, 0)); err != nil {
		t.Fatal(err)
	}
	var slots [2]uint32
	for i, c := range cs {
		r, err := c.Enter(ctx, EnterReq{LockKey: "k", Payment: 0, Account: 0})
		if err != nil || !r.Deferred {
			t.Fatalf("Enter: %+v, %v; want a deferred read", r, err)
		}
		slots[i] = r.Slot
	}
	// One-way: both are in once the second one counted its overlap.
	if c := waitCounts(t, m, func(c Counts) bool { return c.Overlaps == 1 }); c.Overlaps != 1 {
		t.Fatalf("after both Enters: %+v; want 1 overlap", c)
	}
	for i, c := range cs {
		resp, err := c.Finish(ctx, FinishReq{LockKey: "k", Payment: 0, Account: 0, Deferred: true, Slot: slots[i], Amount: 30})
		if err != nil || !resp.Applied {
			t.Fatalf("Finish %d: %+v, %v; want applied", i, resp, err)
		}
	}
	got, err := m.Counts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got.Overlaps != 1 || got.Duplicates != 1 || got.Processed != 1 {
		t.Errorf("counts %+v; want 1 overlap, 1 duplicate, 1 processed", got)
	}
}

// One holder after the other: the second's Enter arrives after the
// first's Finish was applied (the Finish is answered only then), so it
// reads the payment processed and its write is not applied: no duplicate.
// Its Finish answer says so.
func TestArrivalClientsInTurn(t *testing.T) {
	var sync atomic.Bool
	m, cs := arriveServe(t, 2, &sync)
	ctx := context.Background()
	if err := m.Reset(ctx, bank(AccountMode, false, []int64{100}, 0)); err != nil {
		t.Fatal(err)
	}
	for i, c := range cs {
		r, err := c.Enter(ctx, EnterReq{LockKey: "k", Payment: 0, Account: 0})
		if err != nil {
			t.Fatal(err)
		}
		resp, err := c.Finish(ctx, FinishReq{LockKey: "k", Payment: 0, Account: 0, Deferred: true, Slot: r.Slot, Amount: 30})
		if err != nil || resp.Applied != (i == 0) {
			t.Fatalf("Finish %d: %+v, %v; want applied only for the first", i, resp, err)
		}
	}
	got, _ := m.Counts(ctx)
	if got.Overlaps != 0 || got.Duplicates != 0 || got.Processed != 1 {
		t.Errorf("counts %+v; want no overlap, no duplicate, 1 processed", got)
	}
}

// The server's sync flag reaches a client in its next Finish answer; from
// then on its Enters wait for their answers (an ordinary read: not
// deferred, what the store held) and its Finishes are the ordinary ones;
// once an answer brings the flag down, Enters are one-way again.
func TestArrivalSyncFlag(t *testing.T) {
	var sync atomic.Bool
	m, cs := arriveServe(t, 1, &sync)
	c := cs[0]
	ctx := context.Background()
	if err := m.Reset(ctx, bank(AccountMode, false, []int64{100}, 0, 0, 0)); err != nil {
		t.Fatal(err)
	}
	sync.Store(true)
	r, err := c.Enter(ctx, EnterReq{LockKey: "k", Payment: 0, Account: 0})
	if err != nil || !r.Deferred {
		t.Fatalf("first Enter: %+v, %v; want one-way (the flag is not known yet)", r, err)
	}
	if _, err := c.Finish(ctx, FinishReq{LockKey: "k", Payment: 0, Account: 0, Deferred: true, Slot: r.Slot, Amount: 30}); err != nil {
		t.Fatal(err)
	}
	r, err = c.Enter(ctx, EnterReq{LockKey: "k", Payment: 0, Account: 0})
	if err != nil || r.Deferred || !r.Processed || r.Balance != 70 {
		t.Fatalf("Enter with the flag up: %+v, %v; want a waiting Enter reading payment 0 processed, balance 70", r, err)
	}
	sync.Store(false)
	if _, err := c.Finish(ctx, WriteFor(FinishReq{LockKey: "k", Payment: 0, Account: 0}, r, 30)); err != nil {
		t.Fatal(err)
	}
	r, err = c.Enter(ctx, EnterReq{LockKey: "k", Payment: 1, Account: 0})
	if err != nil || !r.Deferred {
		t.Fatalf("Enter after the flag came down: %+v, %v; want one-way", r, err)
	}
	if resp, err := c.Finish(ctx, FinishReq{LockKey: "k", Payment: 1, Account: 0, Deferred: true, Slot: r.Slot, Amount: 30}); err != nil || !resp.Applied {
		t.Fatalf("Finish: %+v, %v; want applied", resp, err)
	}
	got, _ := m.Counts(ctx)
	if got.Processed != 2 || got.Duplicates != 0 || got.Overlaps != 0 {
		t.Errorf("counts %+v; want 2 processed, nothing unsafe", got)
	}
}

// An Enter the store refused (a payment it does not know) is one-way, so
// its error is its Finish's; a Finish of a slot with no Enter is refused.
// Neither breaks the connection.
func TestArrivalErrors(t *testing.T) {
	var sync atomic.Bool
	m, cs := arriveServe(t, 1, &sync)
	c := cs[0]
	ctx := context.Background()
	if err := m.Reset(ctx, bank(AccountMode, false, []int64{100}, 0)); err != nil {
		t.Fatal(err)
	}
	r, err := c.Enter(ctx, EnterReq{LockKey: "k", Payment: 7, Account: 0})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Finish(ctx, FinishReq{LockKey: "k", Payment: 7, Account: 0, Deferred: true, Slot: r.Slot, Amount: 30}); !errors.Is(err, errUnknownPayment) {
		t.Errorf("Finish of a refused Enter: got %v; want %v", err, errUnknownPayment)
	}
	if _, err := c.Finish(ctx, FinishReq{LockKey: "k", Payment: 0, Account: 0, Deferred: true, Slot: 999, Amount: 30}); err == nil || err.Error() != errArriveNoEnter.Error() {
		t.Errorf("Finish of an unknown slot: got %v; want %v", err, errArriveNoEnter)
	}
	r, err = c.Enter(ctx, EnterReq{LockKey: "k", Payment: 0, Account: 0})
	if err != nil {
		t.Fatal(err)
	}
	if resp, err := c.Finish(ctx, FinishReq{LockKey: "k", Payment: 0, Account: 0, Deferred: true, Slot: r.Slot, Amount: 30}); err != nil || !resp.Applied {
		t.Errorf("Finish after the errors: %+v, %v; want applied", resp, err)
	}
}
