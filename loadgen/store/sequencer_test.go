package store

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// recorder is an Accessor that records the payments of the calls it gets
// (Finishes as negative payments) and answers Enters with a fixed read;
// an Enter of payment failPayment fails.
type recorder struct {
	calls       []int64
	read        EnterResp
	fins        []FinishReq
	failPayment int64
}

func (r *recorder) Enter(_ context.Context, q EnterReq) (EnterResp, error) {
	r.calls = append(r.calls, q.Payment)
	if q.Payment == r.failPayment {
		return EnterResp{}, errUnknownPayment
	}
	return r.read, nil
}

func (r *recorder) Finish(_ context.Context, q FinishReq) (FinishResp, error) {
	r.calls = append(r.calls, -q.Payment)
	r.fins = append(r.fins, q)
	return FinishResp{Applied: q.Apply}, nil
}

// seqStep is one step of a sequencer script: connection conn delivers
// event seq (an Enter of payment seq in slot seq, or with finish the
// Finish of slot of), or with close the connection closes.
type seqStep struct {
	conn   int
	seq    uint64
	finish bool
	of     uint64
	close  bool
}

func TestSequencerOrder(t *testing.T) {
	for _, tc := range []struct {
		name  string
		conns int
		steps []seqStep
		want  []int64 // payments applied, in order (Finishes negative)
		gaps  int64
		errs  int64
	}{
		{
			// Two connections, each in number order, deliver interleaved
			// out of order: applied in number order.
			name: "reorder", conns: 2,
			steps: []seqStep{{conn: 1, seq: 2}, {conn: 1, seq: 3}, {conn: 0, seq: 1}, {conn: 0, seq: 5}, {conn: 1, seq: 4}},
			want:  []int64{1, 2, 3, 4, 5},
		},
		{
			// Number 2 was taken and never sent; it is skipped once both
			// open connections have delivered beyond it.
			name: "gap closed by higher numbers", conns: 2,
			steps: []seqStep{{conn: 0, seq: 1}, {conn: 0, seq: 3}, {conn: 1, seq: 4}},
			want:  []int64{1, 3, 4}, gaps: 1,
		},
		{
			// Connection 1 has delivered nothing: the gap waits for it
			// until it closes.
			name: "gap closed by a close", conns: 2,
			steps: []seqStep{{conn: 0, seq: 1}, {conn: 0, seq: 3}, {conn: 1, close: true}},
			want:  []int64{1, 3}, gaps: 1,
		},
		{
			// A gap an open, silent connection might still fill is not
			// skipped: nothing past it is applied.
			name: "gap held open", conns: 2,
			steps: []seqStep{{conn: 0, seq: 1}, {conn: 0, seq: 3}},
			want:  []int64{1},
		},
		{
			// A Finish is applied after its Enter, with the write computed
			// from the read the Enter got.
			name: "enter then finish", conns: 2,
			steps: []seqStep{{conn: 0, seq: 2, finish: true, of: 1}, {conn: 0, seq: 1}},
			want:  []int64{1, -1},
		},
		{
			// An Enter the store refused counts an error, and its Finish
			// is dropped: the holder never entered.
			name: "failed enter", conns: 1,
			steps: []seqStep{{conn: 0, seq: 1}, {conn: 0, seq: 2}, {conn: 0, seq: 3, finish: true, of: 2}},
			want:  []int64{1, 2}, errs: 1,
		},
		{
			// A Finish of a slot never entered is an error.
			name: "finish without enter", conns: 1,
			steps: []seqStep{{conn: 0, seq: 1, finish: true, of: 9}},
			errs:  1,
		},
		{
			// An event below what was applied (its number skipped as a
			// gap) is refused and counted.
			name: "late", conns: 2,
			steps: []seqStep{{conn: 0, seq: 1}, {conn: 0, seq: 3}, {conn: 1, seq: 4}, {conn: 1, seq: 2}},
			want:  []int64{1, 3, 4}, gaps: 1, errs: 1,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recorder{read: EnterResp{Balance: 100, Version: 7}, failPayment: 2}
			if tc.name != "failed enter" {
				rec.failPayment = -1
			}
			q := NewSequencer(rec)
			conns := make([]*seqConn, tc.conns)
			for i := range conns {
				conns[i] = q.connect()
			}
			for _, s := range tc.steps {
				c := conns[s.conn]
				switch {
				case s.close:
					q.disconnect(c)
				case s.finish:
					q.push(s.seq, seqEvent{conn: c, slot: uint32(s.of), finish: true,
						fin: FinishReq{Payment: int64(s.of), Deferred: true, Slot: uint32(s.of), Amount: 30}})
				default:
					q.push(s.seq, seqEvent{conn: c, slot: uint32(s.seq), enter: EnterReq{Payment: int64(s.seq)}})
				}
			}
			if !slices.Equal(rec.calls, tc.want) {
				t.Errorf("applied: got %v; want %v", rec.calls, tc.want)
			}
			if got := q.Gaps(); got != tc.gaps {
				t.Errorf("Gaps: got %d; want %d", got, tc.gaps)
			}
			if got := q.Errors(); got != tc.errs {
				t.Errorf("Errors: got %d; want %d", got, tc.errs)
			}
			for _, f := range rec.fins {
				want := WriteFor(FinishReq{Payment: f.Payment, Slot: f.Slot, Amount: 30}, rec.read, 30)
				if f != want {
					t.Errorf("Finish: got %+v; want %+v", f, want)
				}
			}
		})
	}
}

// Settle returns once every connection has closed and what they sent is
// applied, and not before.
func TestSequencerSettle(t *testing.T) {
	q := NewSequencer(&recorder{failPayment: -1})
	a, b := q.connect(), q.connect()
	q.push(2, seqEvent{conn: a, slot: 2})
	q.disconnect(a)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := q.Settle(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Settle with a connection open: got %v; want %v", err, context.DeadlineExceeded)
	}
	q.disconnect(b)
	if err := q.Settle(context.Background()); err != nil {
		t.Fatalf("Settle: %v", err)
	}
	if got := q.Gaps(); got != 1 {
		t.Errorf("Gaps: got %d; want 1", got)
	}
}

// The stall watch asks for a mark only the open connections that hold a
// gap open, only once application has not moved between two looks, and
// each once until it delivers again; a mark closes the gap.
func TestSequencerStalled(t *testing.T) {
	q := NewSequencer(&recorder{failPayment: -1})
	a, idle := q.connect(), q.connect()
	var asked []string
	q.setPoke(a, func() { asked = append(asked, "a") })
	q.setPoke(idle, func() { asked = append(asked, "idle") })
	// Number 1 was taken by a process that died; a delivered 2.
	q.push(2, seqEvent{conn: a, slot: 2})
	poke := func() {
		for _, p := range q.stalled() {
			p()
		}
	}
	poke() // the first look only notes where application is
	if len(asked) != 0 {
		t.Fatalf("first look asked %v; want nobody yet", asked)
	}
	poke()
	poke() // asked already: not again
	if !slices.Equal(asked, []string{"idle"}) {
		t.Fatalf("asked %v; want the idle connection, once", asked)
	}
	q.push(3, seqEvent{conn: idle, mark: true})
	if q.Applied() != 1 || q.Gaps() != 1 {
		t.Errorf("after the mark: applied %d, gaps %d; want 1 and 1 (the mark is no event)", q.Applied(), q.Gaps())
	}
}

// No gap closes before the connections Expect announced are all made: a
// client may take a number before the server has accepted its
// connection. Here the first connection delivers 2 and closes before the
// second, which took 1, is registered: 1 is waited for, not skipped as a
// gap (after which its event would be refused as late, and lost).
func TestSequencerWaitsForExpected(t *testing.T) {
	r := &recorder{failPayment: -1}
	q := NewSequencer(r)
	q.Expect(2)
	a := q.connect()
	q.push(2, seqEvent{conn: a, slot: 2, enter: EnterReq{Payment: 2}})
	q.disconnect(a)
	if q.Gaps() != 0 || q.Applied() != 0 {
		t.Fatalf("before the second connection: gaps %d, applied %d; want 0 and 0", q.Gaps(), q.Applied())
	}
	b := q.connect()
	q.push(1, seqEvent{conn: b, slot: 1, enter: EnterReq{Payment: 1}})
	q.disconnect(b)
	if !slices.Equal(r.calls, []int64{1, 2}) || q.Gaps() != 0 || q.Errors() != 0 {
		t.Errorf("applied %v, gaps %d, errors %d; want [1 2], 0, 0", r.calls, q.Gaps(), q.Errors())
	}
}

// Past its bound the sequencer fails rather than grow: the events held
// are dropped, a waiting Enter is answered with the error (held or come
// later), nothing is applied after, and Settle reports it. Up to the
// bound it waits as before.
func TestSequencerBound(t *testing.T) {
	r := &recorder{failPayment: -1}
	q := NewSequencer(r)
	q.Bound(3)
	a, idle := q.connect(), q.connect()
	var answers []error
	waiting := func(seq uint64) seqEvent {
		return seqEvent{conn: a, slot: uint32(seq), enter: EnterReq{Payment: int64(seq), Waiting: true},
			reply: func(_ EnterResp, err error) { answers = append(answers, err) }}
	}
	// Number 1 is idle's, not sent (a stopped process): 2..4 wait.
	q.push(2, waiting(2))
	q.push(3, seqEvent{conn: a, slot: 3, enter: EnterReq{Payment: 3}})
	q.push(4, seqEvent{conn: a, slot: 4, enter: EnterReq{Payment: 4}})
	if err := q.Err(); err != nil || len(answers) != 0 {
		t.Fatalf("at the bound: err %v, answers %v; want no error, no answer yet", err, answers)
	}
	q.push(5, seqEvent{conn: a, slot: 5, enter: EnterReq{Payment: 5}})
	if err := q.Err(); !errors.Is(err, ErrSeqOverflow) {
		t.Fatalf("past the bound: Err %v; want %v", err, ErrSeqOverflow)
	}
	select {
	case <-q.Failed():
	default:
		t.Error("Failed is not closed")
	}
	q.push(1, seqEvent{conn: idle, slot: 1, enter: EnterReq{Payment: 1}})
	q.push(6, waiting(6))
	if len(r.calls) != 0 {
		t.Errorf("applied %v after failing; want nothing", r.calls)
	}
	if len(answers) != 2 || !errors.Is(answers[0], ErrSeqOverflow) || !errors.Is(answers[1], ErrSeqOverflow) {
		t.Errorf("waiting Enters answered %v; want both with %v", answers, ErrSeqOverflow)
	}
	q.disconnect(a)
	q.disconnect(idle)
	if err := q.Settle(context.Background()); !errors.Is(err, ErrSeqOverflow) {
		t.Errorf("Settle: got %v; want %v", err, ErrSeqOverflow)
	}
}

// TestSeqRing: the pending ring gives back each event by its number,
// whatever order they were put in, across its growth and its wrapping.
func TestSeqRing(t *testing.T) {
	var r seqRing
	rnd := rand.New(rand.NewPCG(7, 1))
	next := uint64(1)
	for round := range 50 {
		// A batch of numbers from next on, some far ahead (growth), put
		// in a random order; then taken in order.
		span := 1 + rnd.IntN(40+round*20)
		nums := rnd.Perm(span)
		for _, k := range nums {
			seq := next + uint64(k)
			r.put(next, seq, seqEvent{slot: uint32(seq)})
		}
		if r.n != span {
			t.Fatalf("round %d: %d held; want %d", round, r.n, span)
		}
		if _, ok := r.take(next + uint64(span)); ok {
			t.Fatalf("round %d: took a number never put", round)
		}
		for k := range span {
			ev, ok := r.take(next)
			if !ok || ev.seq != next || ev.slot != uint32(next) {
				t.Fatalf("round %d, #%d: take(%d) = %+v, %v; want that event", round, k, next, ev, ok)
			}
			next++
		}
		if r.n != 0 {
			t.Fatalf("round %d: %d held after taking all", round, r.n)
		}
	}
	if len(r.evs)&(len(r.evs)-1) != 0 {
		t.Errorf("ring length %d; want a power of two", len(r.evs))
	}
}
