package store

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// pendingCall is one call in flight; done receives once its answer is in.
type pendingCall struct {
	done   chan struct{}
	tick   uint32 // Client.tick when it was sent
	status byte
	body   [enterResult]byte // the largest result
	msg    string
}

var callPool = sync.Pool{New: func() any { return &pendingCall{done: make(chan struct{}, 1)} }}

// do sends the frame build appends (after the id) and waits for its
// answer, ctx or CallTimeout.
func (c *Client) do(ctx context.Context, build func(b []byte) []byte) (*pendingCall, error) {
	return c.doSeq(ctx, build, -1)
}

// doSeq is do for a frame that takes a sequence number at seqOff (-1: a
// frame without one).
func (c *Client) doSeq(ctx context.Context, build func(b []byte) []byte, seqOff int) (*pendingCall, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	cl := callPool.Get().(*pendingCall)
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		callPool.Put(cl)
		return nil, err
	}
	c.nextID++
	id := c.nextID
	cl.tick = c.tick
	c.pending[id] = cl
	c.mu.Unlock()

	var frame [96]byte
	b := build(le.AppendUint32(frame[:0], id))
	send := c.out.send
	if seqOff >= 0 {
		send = func(b []byte) error { return c.out.sendSeq(b, seqOff, c.seq.Load().page, false) }
	}
	if err := send(b); err != nil {
		c.fail(fmt.Errorf("store: connection lost: %w", err))
	}
	// The watchdog bounds the wait (never forever on a coordinator that
	// went away) without a timer per call.
	var err error
	if done := ctx.Done(); done == nil {
		<-cl.done
	} else {
		select {
		case <-cl.done:
		case <-done:
			err = ctx.Err()
		}
	}
	if err != nil {
		c.mu.Lock()
		_, waiting := c.pending[id]
		delete(c.pending, id)
		c.mu.Unlock()
		if waiting {
			return nil, err // the late answer, if any, is dropped
		}
		<-cl.done // answered meanwhile: take it
	}
	switch cl.status {
	case statusLost:
		c.mu.Lock()
		err := c.err
		c.mu.Unlock()
		callPool.Put(cl)
		return nil, err
	case statusTimeout:
		callPool.Put(cl)
		return nil, fmt.Errorf("store: no answer within %s", CallTimeout)
	}
	return cl, nil
}

// result returns cl's error (the server's) and puts cl back.
func (c *Client) release(cl *pendingCall) error {
	var err error
	if cl.status != statusOK {
		err = remoteError(cl.msg)
	}
	cl.msg = ""
	callPool.Put(cl)
	return err
}

var _ Accessor = (*Client)(nil)

// Enter calls Enter on the served store; on a sequenced client, see
// Sequence.
func (c *Client) Enter(ctx context.Context, r EnterReq) (EnterResp, error) {
	if s := c.seq.Load(); s != nil {
		return c.enterSeq(ctx, s, r)
	}
	if a := c.arrive.Load(); a != nil && !a.sync.Load() {
		return c.enterArrive(a, r)
	}
	cl, err := c.do(ctx, func(b []byte) []byte {
		b = appendKey(b, opEnter, r.LockKey)
		b = le.AppendUint64(b, uint64(r.Token))
		b = le.AppendUint64(b, uint64(r.Payment))
		b = le.AppendUint32(b, uint32(r.Account))
		b = le.AppendUint32(b, uint32(int32(r.Instance)))
		return le.AppendUint32(b, uint32(r.Worker))
	})
	if err != nil {
		return EnterResp{}, err
	}
	f := cl.body
	out := EnterResp{Processed: f[0] != 0, Balance: int64(le.Uint64(f[1:])), Version: int64(le.Uint64(f[9:])),
		Slow: time.Duration(le.Uint64(f[17:])), Entry: int64(le.Uint64(f[25:]))}
	if err := c.release(cl); err != nil {
		return EnterResp{}, err
	}
	return out, nil
}

// Finish calls Finish on the served store; on a sequenced client, see
// Sequence.
func (c *Client) Finish(ctx context.Context, r FinishReq) (FinishResp, error) {
	if s := c.seq.Load(); s != nil {
		return c.finishSeq(s, r)
	}
	a := c.arrive.Load()
	if r.Deferred && a != nil {
		return c.finishArrive(ctx, a, r)
	}
	cl, err := c.do(ctx, func(b []byte) []byte {
		b = appendKey(b, opFinish, r.LockKey)
		b = le.AppendUint64(b, uint64(r.Token))
		b = le.AppendUint64(b, uint64(r.Payment))
		b = le.AppendUint32(b, uint32(r.Account))
		b = append(b, boolByte(r.Apply))
		b = le.AppendUint64(b, uint64(r.Debit))
		b = le.AppendUint64(b, uint64(r.BaseVersion))
		b = le.AppendUint64(b, uint64(r.NewBalance))
		return le.AppendUint64(b, uint64(r.Entry))
	})
	if err != nil {
		return FinishResp{}, err
	}
	return c.finishResult(a, cl)
}
