package store

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"
)

// seqServe serves a fresh Memory with a Sequencer on a local socket and
// dials n sequenced clients of one page.
func seqServe(t *testing.T, n int) (*Memory, *Sequencer, *SeqPage, []*Client) {
	t.Helper()
	ln, err := ListenLocal()
	if err != nil {
		t.Fatal(err)
	}
	page, err := NewSeqPage()
	if err != nil {
		t.Fatal(err)
	}
	m := NewMemory()
	q := NewSequencer(m)
	q.Expect(n)
	go func() { _ = ServeWith(ln, m, ServeOptions{Inline: true, Seq: q}) }()
	t.Cleanup(func() { ln.Close(); page.Close() })
	return m, q, page, dialClients(t, ln.Addr().String(), n, func(c *Client) { c.Sequence(page) })
}

// dialClients dials n clients of the store at addr, each made what it is
// (sequenced, arrival) by mode before any call.
func dialClients(t *testing.T, addr string, n int, mode func(*Client)) []*Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	var cs []*Client
	for range n {
		c, err := Dial(ctx, addr)
		if err != nil {
			t.Fatal(err)
		}
		mode(c)
		cs = append(cs, c)
	}
	return cs
}

// Two sequenced clients, each a holder of one payment of account 0, enter
// before either finishes: the store judges the order the numbers give,
// with the writes computed from the reads the coordinator saw (both read
// "not processed", both apply: a duplicate). The last frames are sent by
// Close (they are lazy), and Settle waits for them.
func TestSequencedClientsOverlap(t *testing.T) {
	m, q, _, cs := seqServe(t, 2)
	ctx := context.Background()
	if err := m.Reset(ctx, bank(AccountMode, false, []int64{100}, 0)); err != nil {
		t.Fatal(err)
	}
	a, b := cs[0], cs[1]
	ra, err := a.Enter(ctx, EnterReq{LockKey: "k", Payment: 0, Account: 0})
	if err != nil || !ra.Deferred {
		t.Fatalf("Enter: %+v, %v; want a deferred read", ra, err)
	}
	rb, err := b.Enter(ctx, EnterReq{LockKey: "k", Payment: 0, Account: 0})
	if err != nil || !rb.Deferred {
		t.Fatalf("Enter: %+v, %v; want a deferred read", rb, err)
	}
	for _, f := range []struct {
		c    *Client
		slot uint32
	}{{a, ra.Slot}, {b, rb.Slot}} {
		if _, err := f.c.Finish(ctx, FinishReq{LockKey: "k", Payment: 0, Account: 0, Deferred: true, Slot: f.slot, Amount: 30}); err != nil {
			t.Fatal(err)
		}
	}
	a.Close()
	b.Close()
	if err := q.Settle(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := m.Counts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got.Overlaps != 1 || got.Duplicates != 1 || got.Processed != 1 || q.Applied() != 4 || q.Errors() != 0 {
		t.Errorf("counts %+v, applied %d, errors %d; want 1 overlap, 1 duplicate, 1 processed, 4 applied, no errors", got, q.Applied(), q.Errors())
	}
}

// With the sync flag set an Enter waits for its answer, applied after
// everything numbered before it: here the other client's Finish, so it
// reads the payment processed and the balance debited. A synchronous
// Finish on a sequenced client is refused.
func TestSequencedClientWaits(t *testing.T) {
	m, q, page, cs := seqServe(t, 2)
	ctx := context.Background()
	if err := m.Reset(ctx, bank(AccountMode, false, []int64{100}, 0)); err != nil {
		t.Fatal(err)
	}
	a, b := cs[0], cs[1]
	ra, err := a.Enter(ctx, EnterReq{LockKey: "k", Payment: 0, Account: 0})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Finish(ctx, FinishReq{LockKey: "k", Payment: 0, Account: 0, Deferred: true, Slot: ra.Slot, Amount: 30}); err != nil {
		t.Fatal(err)
	}
	page.SetSync(true)
	// a's frames are lazy: b's waiting Enter is answered once they are in.
	rb, err := b.Enter(ctx, EnterReq{LockKey: "k", Payment: 0, Account: 0})
	if err != nil {
		t.Fatal(err)
	}
	if !rb.Deferred || !rb.Processed || rb.Balance != 70 {
		t.Errorf("waiting Enter read %+v; want deferred, processed, balance 70", rb)
	}
	if _, err := b.Finish(ctx, FinishReq{LockKey: "k", Payment: 0, Account: 0}); err != errNotDeferred {
		t.Errorf("synchronous Finish: got %v; want %v", err, errNotDeferred)
	}
	if _, err := b.Finish(ctx, FinishReq{LockKey: "k", Payment: 0, Account: 0, Deferred: true, Slot: rb.Slot, Amount: 30}); err != nil {
		t.Fatal(err)
	}
	a.Close()
	b.Close()
	if err := q.Settle(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := m.Counts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got.Duplicates != 0 || got.Processed != 1 || q.Waited() != 1 || q.Errors() != 0 {
		t.Errorf("counts %+v, waited %d, errors %d; want no duplicate, 1 processed, 1 waited, no errors", got, q.Waited(), q.Errors())
	}
}

// A number taken and never sent (a process that died) does not stall the
// sequencer while another client is connected and idle: the stall watch
// asks the idle client for a mark, and the gap closes without anyone
// closing.
func TestSequencedIdleClientMarks(t *testing.T) {
	m, q, page, cs := seqServe(t, 2)
	ctx := context.Background()
	if err := m.Reset(ctx, bank(AccountMode, false, []int64{100}, 0)); err != nil {
		t.Fatal(err)
	}
	page.Next() // taken by a process that died before sending it
	a := cs[0]  // cs[1] stays idle
	ra, err := a.Enter(ctx, EnterReq{LockKey: "k", Payment: 0, Account: 0})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Finish(ctx, FinishReq{LockKey: "k", Payment: 0, Account: 0, Deferred: true, Slot: ra.Slot, Amount: 30}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Second)
	for q.Applied() < 2 && time.Now().Before(deadline) {
		time.Sleep(stallEvery)
	}
	if q.Applied() != 2 || q.Gaps() != 1 {
		t.Errorf("applied %d, gaps %d with both clients open; want 2 and 1", q.Applied(), q.Gaps())
	}
}

// A closed sequenced client takes no more numbers: a mark asked for after
// Close (the stall watch may ask at any time) and an Enter are refused
// before they take one. Without that, an instance process that unmapped
// its page after closing crashed on the mark (SIGSEGV) and lost every
// frame it still had queued, and a mark taken after the last write was
// a gap.
func TestSequencedClientClosedTakesNoNumber(t *testing.T) {
	_, _, page, cs := seqServe(t, 1)
	ctx := context.Background()
	c := cs[0]
	if _, err := c.Enter(ctx, EnterReq{LockKey: "k", Payment: 0, Account: 0}); err != nil {
		t.Fatal(err)
	}
	c.Close()
	last := page.Last()
	c.mark()
	if _, err := c.Enter(ctx, EnterReq{LockKey: "k", Payment: 1, Account: 0}); err == nil {
		t.Error("Enter on a closed client: got nil; want an error")
	}
	if got := page.Last(); got != last {
		t.Errorf("numbers taken after Close: %d; want none", got-last)
	}
}

// Over a real socket: a connection that holds a number and sends nothing
// (a stopped process: it answers no mark either) keeps the other
// client's events waiting until the bound, and then the sequencer fails:
// that client's waiting Enter gets the error instead of waiting for ever,
// and Settle reports it.
func TestSequencedClientBound(t *testing.T) {
	ln, err := ListenLocal()
	if err != nil {
		t.Fatal(err)
	}
	page, err := NewSeqPage()
	if err != nil {
		t.Fatal(err)
	}
	m := NewMemory()
	q := NewSequencer(m)
	q.Expect(2)
	const bound = 4
	q.Bound(bound)
	go func() { _ = ServeWith(ln, m, ServeOptions{Inline: true, Seq: q}) }()
	t.Cleanup(func() { ln.Close(); page.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	if err := m.Reset(ctx, bank(AccountMode, false, []int64{1000}, 0)); err != nil {
		t.Fatal(err)
	}
	// The stopped process: connected (its hello sent), silent, its
	// number taken, deaf to marks.
	network, addr := "tcp", ln.Addr().String()
	if name, ok := strings.CutPrefix(addr, "unix:"); ok {
		network, addr = "unix", name
	}
	stopped, err := net.Dial(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	defer stopped.Close()
	if _, err := stopped.Write(appendKey([]byte(protoMagic), protoVersion, "")); err != nil {
		t.Fatal(err)
	}
	page.Next()
	a, err := Dial(ctx, ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	a.Sequence(page)
	for p := range int64(bound + 1) {
		if _, err := a.Enter(ctx, EnterReq{LockKey: "k", Payment: p, Account: 0}); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(2 * time.Second)
	for q.Err() == nil && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	page.SetSync(true)
	if _, err := a.Enter(ctx, EnterReq{LockKey: "k", Payment: 9, Account: 0}); err == nil || !strings.Contains(err.Error(), "reorder bound") {
		t.Errorf("waiting Enter past the bound: got %v; want the sequencer's error", err)
	}
	a.Close()
	stopped.Close()
	if err := q.Settle(ctx); !errors.Is(err, ErrSeqOverflow) {
		t.Errorf("Settle: got %v; want %v", err, ErrSeqOverflow)
	}
}
