package store

import (
	"context"
	"errors"
	"sync/atomic"
	"time"
)

// clientSeq is a sequenced client's state.
type clientSeq struct {
	page  *SeqPage
	slots atomic.Uint32
	// anchor and wall are the clock the events are timed by: one
	// monotonic read an event, as the workers' clock (loadgen's clock).
	anchor time.Time
	wall   int64
}

// now is the time in Unix nanoseconds.
func (s *clientSeq) now() int64 { return s.wall + int64(time.Since(s.anchor)) }

// Sequence makes c a sequenced client of a store served with a Sequencer
// (ServeOptions.Seq), its events numbered from p. Call it before any call.
// An Enter is then sent one-way and returns a deferred read (only
// EnterResp.Deferred and Slot), or, while p's sync flag is set, waits for
// its answer, applied in order (with Slow), still deferred. A Finish must
// be deferred (FinishReq.Deferred, Slot, Amount): sent one-way, it returns
// an empty FinishResp, and the coordinator computes and judges the write.
// Store errors for one-way events reach Sequencer.Errors, not the caller.
func (c *Client) Sequence(p *SeqPage) {
	now := time.Now()
	c.out.setLazy(SeqFlushEvery)
	c.seq.Store(&clientSeq{page: p, anchor: now, wall: now.UnixNano()})
}

// SeqFlushEvery bounds how long a sequenced client's one-way frames wait
// to be written while no trap is armed: 1 ms. They are applied that much
// later; nobody waits on them but the Enters of other processes that do
// wait (sync), and while a trap is armed the frames are written at once.
const SeqFlushEvery = time.Millisecond

// errNotDeferred: a sequenced client's Finish must finish a deferred Enter.
var errNotDeferred = errors.New("store: synchronous Finish on a sequenced client")

func (c *Client) enterSeq(ctx context.Context, s *clientSeq, r EnterReq) (EnterResp, error) {
	slot := s.slots.Add(1)
	op := byte(opEnterSeq)
	if s.page.Sync() {
		op = opEnterSeqWait
	}
	// The seq is written into the frame at seqAt when it is queued.
	var seqAt int
	build := func(b []byte) []byte {
		b = appendKey(b, op, r.LockKey)
		seqAt = len(b)
		b = le.AppendUint64(b, 0)
		b = le.AppendUint64(b, uint64(r.Token))
		b = le.AppendUint64(b, uint64(r.Payment))
		b = le.AppendUint32(b, uint32(r.Account))
		b = le.AppendUint32(b, uint32(int32(r.Instance)))
		b = le.AppendUint32(b, slot)
		b = le.AppendUint64(b, uint64(s.now()))
		return le.AppendUint32(b, uint32(r.Worker))
	}
	if op == opEnterSeq {
		if err := c.post(s, build, &seqAt); err != nil {
			return EnterResp{}, err
		}
		return EnterResp{Deferred: true, Slot: slot}, nil
	}
	// The frame's length up to the seq is the same whatever the id: 4
	// bytes of id, the op, the key.
	cl, err := c.doSeq(ctx, build, 4+1+2+min(len(r.LockKey), maxKey))
	if err != nil {
		return EnterResp{}, err
	}
	f := cl.body
	out := EnterResp{Processed: f[0] != 0, Balance: int64(le.Uint64(f[1:])), Version: int64(le.Uint64(f[9:])),
		Slow: time.Duration(le.Uint64(f[17:])), Entry: int64(le.Uint64(f[25:])), Deferred: true, Slot: slot}
	if err := c.release(cl); err != nil {
		return EnterResp{}, err
	}
	return out, nil
}

func (c *Client) finishSeq(s *clientSeq, r FinishReq) (FinishResp, error) {
	if !r.Deferred {
		return FinishResp{}, errNotDeferred
	}
	var seqAt int
	build := func(b []byte) []byte {
		b = appendKey(b, opFinishSeq, r.LockKey)
		seqAt = len(b)
		b = le.AppendUint64(b, 0)
		b = le.AppendUint64(b, uint64(r.Token))
		b = le.AppendUint64(b, uint64(r.Payment))
		b = le.AppendUint32(b, uint32(r.Account))
		b = le.AppendUint32(b, r.Slot)
		b = le.AppendUint64(b, uint64(r.Amount))
		return le.AppendUint64(b, uint64(s.now()))
	}
	return FinishResp{}, c.post(s, build, &seqAt)
}

// post sends a one-way sequenced frame (id 0), its number written at
// *seqAt (which build sets).
func (c *Client) post(s *clientSeq, build func(b []byte) []byte, seqAt *int) error {
	c.mu.Lock()
	err := c.err
	c.mu.Unlock()
	if err != nil {
		return err
	}
	var frame [96]byte
	b := build(le.AppendUint32(frame[:0], 0))
	// While a trap is armed, others wait on what this client has sent.
	if err := c.out.sendSeq(b, *seqAt, s.page, !s.page.Sync()); err != nil {
		c.fail(err)
		return err
	}
	return nil
}

// mark answers the server's mark request (Sequencer.watch): a frame with
// nothing but a number, taken now, sent at once.
func (c *Client) mark() {
	s := c.seq.Load()
	if s == nil {
		return
	}
	b := appendKey(le.AppendUint32(nil, 0), opSeqMark, "")
	off := len(b)
	b = le.AppendUint64(b, 0)
	_ = c.out.sendSeq(b, off, s.page, false)
}
