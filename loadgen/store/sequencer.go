package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Sequencer applies the sequenced events of every connection of a served
// store in the order of their numbers (SeqPage.Next), whatever order the
// connections deliver them in: it calls the store's Enter, keeps the read
// per (connection, slot), and at the Finish computes the write (WriteFor)
// and calls the store's Finish. A number never sent (a gap) is skipped
// once no open connection can still send it; once more events than its
// bound (Bound) wait behind one, it fails (Err). Why number order is a
// valid order to judge in, and why it fails: The sequenced store, in the
// package doc.
type Sequencer struct {
	st Accessor

	mu      sync.Mutex
	next    uint64 // the next number to apply
	pending seqRing
	// bound is the most events pending may hold (Bound); err is set,
	// and failed closed, once it was exceeded: nothing is applied after.
	bound   int
	err     error
	failed  chan struct{}
	open    []*seqConn
	gaps    int64
	applied int64
	waited  int64
	// connects counts the connections registered; expect is how many
	// Settle waits for (Expect).
	connects, expect int
	// checked is next as the stall watch last saw it (watch).
	checked uint64

	errs atomic.Int64
}

// seqEvent is one sequenced event as a connection delivered it.
type seqEvent struct {
	seq    uint64 // its number (set by seqRing.put)
	conn   *seqConn
	slot   uint32
	finish bool
	mark   bool // a client's mark (see watch): no event
	enter  EnterReq
	fin    FinishReq
	// reply, for a waiting Enter, takes its answer; nil for a one-way
	// event.
	reply func(EnterResp, error)
}

// seqConn is one connection's state in the sequencer. Only the sequencer
// touches it, under its mutex.
type seqConn struct {
	high  uint64 // the highest number it delivered
	reads map[uint32]seqRead
	// poke asks the client for a mark (nil until the connection is
	// served); poked is set once asked, until it delivers again.
	poke  func()
	poked bool
}

// seqRead is what a deferred Enter read, kept for its Finish.
type seqRead struct {
	resp   EnterResp
	failed bool // the store refused the Enter: its Finish is dropped
}

// NewSequencer applies events to st, starting from number 1 (a fresh
// SeqPage's first).
func NewSequencer(st Accessor) *Sequencer {
	return &Sequencer{st: st, next: 1,
		bound: DefaultPendingBound, failed: make(chan struct{})}
}

// DefaultPendingBound is the most events a Sequencer holds waiting behind
// a missing number unless Bound says otherwise: 2²⁰ (1,048,576), some
// 230 MB at its fullest and some 17 s of load behind one stopped process
// (measured: see the package doc).
const DefaultPendingBound = 1 << 20

// ErrSeqOverflow is the error of a Sequencer whose events waiting behind
// a missing number went past its bound (Bound).
var ErrSeqOverflow = errors.New("store: sequenced events past the reorder bound")

// Bound sets the most events the sequencer holds waiting behind a missing
// number to n (default DefaultPendingBound); one more and it fails: it
// drops what it holds, answers waiting Enters with the error, applies
// nothing more (every later event is dropped), and Err, Failed and Settle
// report it. The run it served cannot be judged and must fail. Holding the
// other processes back instead would hide the overlap a pause fault makes
// (see the package doc).
func (s *Sequencer) Bound(n int) {
	s.mu.Lock()
	s.bound = max(n, 1)
	s.mu.Unlock()
}

// Err is the sequencer's failure (ErrSeqOverflow, with what was waiting
// for which number), or nil.
func (s *Sequencer) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Failed is closed once the sequencer has failed (Err).
func (s *Sequencer) Failed() <-chan struct{} { return s.failed }

// fail ends application with err: the pending events are dropped, their
// waiting Enters answered with err. The mutex is held.
func (s *Sequencer) fail(err error) {
	s.err = err
	close(s.failed)
	s.pending.each(func(ev *seqEvent) {
		if ev.reply != nil {
			ev.reply(EnterResp{}, err)
		}
	})
	s.pending = seqRing{}
}

// Errors is how many one-way events the store refused: errors the holder
// could not be told of, which the runner counts as store errors.
func (s *Sequencer) Errors() int64 { return s.errs.Load() }

// Applied is how many events were applied.
func (s *Sequencer) Applied() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.applied
}

// Waited is how many of the events applied were waiting Enters.
func (s *Sequencer) Waited() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.waited
}

// Gaps is how many numbers were skipped as never to be delivered.
func (s *Sequencer) Gaps() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gaps
}

// connect registers a connection: gaps wait for it until it closes.
func (s *Sequencer) connect() *seqConn {
	c := &seqConn{reads: map[uint32]seqRead{}}
	s.mu.Lock()
	s.connects++
	s.open = append(s.open, c)
	s.mu.Unlock()
	return c
}

// disconnect ends c: the gaps below what others delivered no longer wait
// for it. Its events delivered so far are still applied.
func (s *Sequencer) disconnect(c *seqConn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, o := range s.open {
		if o == c {
			s.open[i] = s.open[len(s.open)-1]
			s.open = s.open[:len(s.open)-1]
			break
		}
	}
	s.drain()
}

// push takes event seq of c and applies whatever is now next in order.
// The pushing goroutine applies it, under the mutex: one applier at a
// time, without a hand-off per event.
func (s *Sequencer) push(seq uint64, ev seqEvent) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		// Failed: nothing is applied any more; a waiting Enter is told.
		if ev.reply != nil {
			ev.reply(EnterResp{}, s.err)
		}
		return
	}
	ev.conn.high = max(ev.conn.high, seq)
	ev.conn.poked = false
	if seq < s.next {
		// Below what was applied: only a number skipped as a gap can be,
		// and it was not one. Count it; applying it now would break the
		// order.
		s.errs.Add(1)
		if ev.reply != nil {
			ev.reply(EnterResp{}, errSeqLate)
		}
		return
	}
	if seq-s.next > 2*uint64(s.bound) {
		// As far ahead of the next number as twice the bound: the events
		// between are in flight or held back, and would be past it.
		s.fail(fmt.Errorf("%w: number %d arrived while %d, which no connection has sent, is still awaited (a process stopped, or stuck, with it unsent)", ErrSeqOverflow, seq, s.next))
		if ev.reply != nil {
			ev.reply(EnterResp{}, s.err)
		}
		return
	}
	s.pending.put(s.next, seq, ev)
	s.drain()
	if s.pending.n > s.bound {
		s.fail(fmt.Errorf("%w: more than %d events wait behind number %d, which no connection has sent (a process stopped, or stuck, with it unsent)", ErrSeqOverflow, s.bound, s.next))
	}
}

var errSeqLate = errors.New("store: sequenced event arrived after its number was skipped")

// drain applies the pending events in order, skipping closed gaps. The
// mutex is held.
func (s *Sequencer) drain() {
	for s.pending.n > 0 {
		if ev, ok := s.pending.take(s.next); ok {
			s.next++
			if ev.mark {
				continue // it only moved its connection's high mark
			}
			s.applied++
			s.apply(ev)
			continue
		}
		if !s.gapClosed() {
			return
		}
		s.gaps++
		s.next++
	}
}

// gapClosed reports whether number next, missing, can no longer come:
// every connection Expect announced has been made, and every open one has
// delivered a higher number. (A client's Dial returns before the server
// has accepted its connection, and the client may take numbers at once:
// until then no one can tell whether they were sent.)
func (s *Sequencer) gapClosed() bool {
	if s.connects < s.expect {
		return false
	}
	for _, c := range s.open {
		if c.high <= s.next {
			return false
		}
	}
	return true
}

// apply runs one event on the store.
func (s *Sequencer) apply(ev seqEvent) {
	ctx := context.Background()
	c := ev.conn
	if !ev.finish {
		resp, err := s.st.Enter(ctx, ev.enter)
		resp.Deferred, resp.Slot = true, ev.slot
		c.reads[ev.slot] = seqRead{resp: resp, failed: err != nil}
		if ev.reply != nil {
			s.waited++
			ev.reply(resp, err)
		} else if err != nil {
			s.errs.Add(1)
		}
		return
	}
	read, ok := c.reads[ev.slot]
	delete(c.reads, ev.slot)
	if read.failed {
		return // the holder did not enter: it has nothing to finish
	}
	if !ok {
		s.errs.Add(1) // a Finish of no Enter on its connection
		return
	}
	fin := WriteFor(ev.fin, read.resp, ev.fin.Amount)
	fin.Deferred = false
	if _, err := s.st.Finish(ctx, fin); err != nil {
		s.errs.Add(1)
	}
}

// setPoke sets how c is asked for a mark.
func (s *Sequencer) setPoke(c *seqConn, poke func()) {
	s.mu.Lock()
	c.poke = poke
	s.mu.Unlock()
}

// stallEvery is how often the stall watch looks: 10 ms.
const stallEvery = 10 * time.Millisecond

// watch, until stop is called, asks the connections holding a stalled gap
// open (stalled) for a mark: a number taken after all the client took
// before, so once it is in, the gap closes unless it was that connection's.
// Without it an idle connection would hold a dead process's gap open until
// it sent something (see the package doc).
func (s *Sequencer) watch() (stop func()) {
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(stallEvery)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			for _, poke := range s.stalled() {
				poke()
			}
		}
	}()
	return func() { close(done) }
}

// stalled returns the pokes of the connections holding a stalled gap
// open, marking them asked.
func (s *Sequencer) stalled() []func() {
	s.mu.Lock()
	defer s.mu.Unlock()
	moved := s.next != s.checked
	s.checked = s.next
	if moved || s.pending.n == 0 {
		return nil
	}
	var pokes []func()
	for _, c := range s.open {
		if c.high <= s.next && !c.poked && c.poke != nil {
			c.poked = true
			pokes = append(pokes, c.poke)
		}
	}
	return pokes
}

// settlePoll is how often Settle looks: 1 ms.
const settlePoll = time.Millisecond

// Expect says that n connections will be made: until they have been, no
// gap closes and Settle does not return. A client's Dial returns once the
// connection is queued to be accepted, and the client may take numbers
// and send at once: without it a gap could be skipped, and Settle could
// return, before the server has accepted the connection that holds it.
func (s *Sequencer) Expect(n int) {
	s.mu.Lock()
	s.expect = n
	s.mu.Unlock()
}

// Settle waits until the expected connections (Expect) have been made
// and every connection has closed and every event they delivered is
// applied, or the sequencer has failed (its Err), or ctx is done. Call
// it after the instances have stopped and before the store's final
// Counts.
func (s *Sequencer) Settle(ctx context.Context) error {
	t := time.NewTicker(settlePoll)
	defer t.Stop()
	for {
		s.mu.Lock()
		done := s.connects >= s.expect && len(s.open) == 0 && s.pending.n == 0
		err := s.err
		s.mu.Unlock()
		if err != nil {
			return err
		}
		if done {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// seqRing holds the events waiting to be applied, by number: the event
// numbered seq in slot seq mod its length, which is a power of two and at
// least the span from the next number to apply to the highest held. It
// grows by doubling and never shrinks; a map would cost twice the CPU per
// event (see the package doc).
type seqRing struct {
	evs []seqEvent
	has []bool
	n   int // events held
}

// put holds ev, numbered seq; next (≤ seq) is the next number to apply.
func (r *seqRing) put(next, seq uint64, ev seqEvent) {
	if seq-next >= uint64(len(r.evs)) {
		r.grow(next, seq)
	}
	i := seq & uint64(len(r.evs)-1)
	if !r.has[i] {
		r.n++
	}
	ev.seq = seq
	r.evs[i], r.has[i] = ev, true
}

// take removes and returns the event numbered seq, if held.
func (r *seqRing) take(seq uint64) (seqEvent, bool) {
	if r.n == 0 {
		return seqEvent{}, false
	}
	i := seq & uint64(len(r.evs)-1)
	if !r.has[i] {
		return seqEvent{}, false
	}
	ev := r.evs[i]
	r.evs[i], r.has[i] = seqEvent{}, false
	r.n--
	return ev, true
}

// grow makes room for the numbers next to seq, keeping what is held. Only
// numbers from next on are held, so each lands in its own new slot.
func (r *seqRing) grow(next, seq uint64) {
	size := max(64, len(r.evs))
	for seq-next >= uint64(size) {
		size *= 2
	}
	evs, has := make([]seqEvent, size), make([]bool, size)
	for i, h := range r.has {
		if h {
			j := r.evs[i].seq & uint64(size-1)
			evs[j], has[j] = r.evs[i], true
		}
	}
	r.evs, r.has = evs, has
}

// each calls f for every event held.
func (r *seqRing) each(f func(*seqEvent)) {
	for i, h := range r.has {
		if h {
			f(&r.evs[i])
		}
	}
}
