package store

import (
	"bufio"
	"context"
	"errors"
	"io"
	"sync/atomic"
)

// The arrival-ordered ops (Client.Arrive): a critical section in one round
// trip. The Enter (opEnterArrive) is one-way, applied as its frame arrives,
// its read kept under the section's slot; the Finish (opFinishArrive) is
// answered once applied, its write computed from that read. Why arrival
// order is a valid order to judge in: Arrival order, in the package doc.
const (
	opEnterArrive  = 7
	opFinishArrive = 8

	// enterArriveFixed: token, payment, account, instance, slot, worker;
	// finishArriveFixed: token, payment, account, slot, amount.
	enterArriveFixed  = 8 + 8 + 4 + 4 + 4 + 4
	finishArriveFixed = 8 + 8 + 4 + 4 + 8

	// finishSyncFlag is the bit of a Finish answer's flags byte (opFinish's
	// too) that carries the server's sync flag (ServeOptions.Sync): while
	// it is set, an arrival client sends ordinary Enters and Finishes.
	finishSyncFlag = 4
)

// errArriveNoEnter: an arrival Finish whose slot has no Enter on its
// connection.
var errArriveNoEnter = errors.New("store: deferred Finish without its Enter")

// arriveConn is one connection's arrival-ordered sections under way: the
// read of each Enter applied, by slot, until its Finish. Only the
// connection's reader touches it.
type arriveConn struct {
	reads map[uint32]arriveRead
}

// arriveRead is what an arrival Enter read, or why the store refused it.
type arriveRead struct {
	resp EnterResp
	err  error
}

// serveArrive reads the fixed fields of arrival op op (its id and key
// read) into f and applies it to s at once, on the reader's goroutine, so
// that a connection's events are applied in the order they arrived; a
// Finish is answered with send.
func serveArrive(ctx context.Context, br *bufio.Reader, op byte, id uint32, key string, f []byte, ac *arriveConn, s Store, o ServeOptions, send func([]byte) error) error {
	if op == opEnterArrive {
		if _, err := io.ReadFull(br, f[:enterArriveFixed]); err != nil {
			return err
		}
		r := EnterReq{LockKey: key, Token: int64(le.Uint64(f[0:])), Payment: int64(le.Uint64(f[8:])),
			Account: int32(le.Uint32(f[16:])), Instance: int(int32(le.Uint32(f[20:]))), Worker: int32(le.Uint32(f[28:]))}
		resp, err := s.Enter(ctx, r)
		ac.reads[le.Uint32(f[24:])] = arriveRead{resp: resp, err: err}
		return nil
	}
	if _, err := io.ReadFull(br, f[:finishArriveFixed]); err != nil {
		return err
	}
	slot := le.Uint32(f[20:])
	read, ok := ac.reads[slot]
	delete(ac.reads, slot)
	var b [5 + 2 + 1]byte
	switch {
	case !ok:
		return send(appendErr(b[:0], id, errArriveNoEnter))
	case read.err != nil:
		// The Enter's error, answered to the Finish: the holder counts it
		// once, as it would have at a waiting Enter.
		return send(appendErr(b[:0], id, read.err))
	}
	fin := WriteFor(FinishReq{LockKey: key, Token: int64(le.Uint64(f[0:])), Payment: int64(le.Uint64(f[8:])),
		Account: int32(le.Uint32(f[16:]))}, read.resp, int64(le.Uint64(f[24:])))
	resp, err := s.Finish(ctx, fin)
	return send(appendFinishAnswer(b[:0], id, resp, err, o))
}

// appendFinishAnswer is the answer frame of Finish id: its flags, the
// server's sync flag among them.
func appendFinishAnswer(b []byte, id uint32, resp FinishResp, err error, o ServeOptions) []byte {
	if err != nil {
		return appendErr(b, id, err)
	}
	flags := boolByte(resp.Applied) | boolByte(resp.StaleRejected)<<1 | byte(resp.Refused)<<3
	if o.Sync != nil && o.Sync() {
		flags |= finishSyncFlag
	}
	return append(appendHead(b, id, statusOK, 1), flags)
}

// clientArrive is an arrival client's state (Client.Arrive).
type clientArrive struct {
	slots atomic.Uint32
	// sync is the server's sync flag as the last Finish answer gave it.
	sync atomic.Bool
}

// Arrive makes c an arrival client, for instances on agents, which cannot
// share the coordinator's SeqPage (Sequence). Call it before any call. Its
// Enter is sent one-way and returns a deferred read (EnterResp.Deferred
// and Slot), unless the last Finish answer set the server's sync flag:
// then it is an ordinary waiting Enter. A Finish of a deferred Enter
// (FinishReq.Deferred, Slot, Amount) waits for its answer; the server
// computes the write. An error the store returned for the Enter is the
// Finish's.
func (c *Client) Arrive() { c.arrive.Store(&clientArrive{}) }

func (c *Client) enterArrive(a *clientArrive, r EnterReq) (EnterResp, error) {
	c.mu.Lock()
	err := c.err
	c.mu.Unlock()
	if err != nil {
		return EnterResp{}, err
	}
	slot := a.slots.Add(1)
	var frame [96]byte
	b := appendKey(le.AppendUint32(frame[:0], 0), opEnterArrive, r.LockKey)
	b = le.AppendUint64(b, uint64(r.Token))
	b = le.AppendUint64(b, uint64(r.Payment))
	b = le.AppendUint32(b, uint32(r.Account))
	b = le.AppendUint32(b, uint32(int32(r.Instance)))
	b = le.AppendUint32(b, slot)
	b = le.AppendUint32(b, uint32(r.Worker))
	// Written at once, not lazily: the judged section starts when it
	// arrives.
	if err := c.out.send(b); err != nil {
		c.fail(err)
		return EnterResp{}, err
	}
	return EnterResp{Deferred: true, Slot: slot}, nil
}

func (c *Client) finishArrive(ctx context.Context, a *clientArrive, r FinishReq) (FinishResp, error) {
	cl, err := c.do(ctx, func(b []byte) []byte {
		b = appendKey(b, opFinishArrive, r.LockKey)
		b = le.AppendUint64(b, uint64(r.Token))
		b = le.AppendUint64(b, uint64(r.Payment))
		b = le.AppendUint32(b, uint32(r.Account))
		b = le.AppendUint32(b, r.Slot)
		return le.AppendUint64(b, uint64(r.Amount))
	})
	if err != nil {
		return FinishResp{}, err
	}
	return c.finishResult(a, cl)
}

// finishResult reads a Finish's answer (and, on an arrival client, the
// sync flag it carries) and puts cl back.
func (c *Client) finishResult(a *clientArrive, cl *pendingCall) (FinishResp, error) {
	f := cl.body[0]
	if err := c.release(cl); err != nil {
		return FinishResp{}, err
	}
	if a != nil {
		a.sync.Store(f&finishSyncFlag != 0)
	}
	return FinishResp{Applied: f&1 != 0, StaleRejected: f&2 != 0, Refused: Refusal(f >> 3 & 3)}, nil
}
