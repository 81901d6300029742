package store

import (
	"bufio"
	"io"
)

// readSeq reads the fixed fields of sequenced op op (its id and key read)
// into f and pushes the event to q. A waiting Enter's answer is sent with
// send once it is applied, from whichever goroutine applies it, so send
// must be safe for concurrent use (the connection's coalescer).
func readSeq(br *bufio.Reader, op byte, id uint32, key string, f []byte, c *seqConn, q *Sequencer, send func([]byte) error) error {
	if op == opSeqMark {
		if _, err := io.ReadFull(br, f[:8]); err != nil {
			return err
		}
		q.push(le.Uint64(f[0:]), seqEvent{conn: c, mark: true})
		return nil
	}
	if op == opFinishSeq {
		if _, err := io.ReadFull(br, f[:finishSeqFixed]); err != nil {
			return err
		}
		r := FinishReq{LockKey: key, Token: int64(le.Uint64(f[8:])), Payment: int64(le.Uint64(f[16:])),
			Account: int32(le.Uint32(f[24:])), Slot: le.Uint32(f[28:]), Amount: int64(le.Uint64(f[32:])),
			AtNs: int64(le.Uint64(f[40:])), Deferred: true}
		q.push(le.Uint64(f[0:]), seqEvent{conn: c, slot: r.Slot, finish: true, fin: r})
		return nil
	}
	if _, err := io.ReadFull(br, f[:enterSeqFixed]); err != nil {
		return err
	}
	r := EnterReq{LockKey: key, Token: int64(le.Uint64(f[8:])), Payment: int64(le.Uint64(f[16:])),
		Account: int32(le.Uint32(f[24:])), Instance: int(int32(le.Uint32(f[28:]))),
		AtNs: int64(le.Uint64(f[36:])), Worker: int32(le.Uint32(f[44:])), Waiting: op == opEnterSeqWait}
	ev := seqEvent{conn: c, slot: le.Uint32(f[32:]), enter: r}
	if r.Waiting {
		ev.reply = func(resp EnterResp, err error) { _ = send(appendEnterAnswer(id, resp, err)) }
	}
	q.push(le.Uint64(f[0:]), ev)
	return nil
}

// appendEnterAnswer is the answer frame of Enter id.
func appendEnterAnswer(id uint32, resp EnterResp, err error) []byte {
	var b [5 + 2 + enterResult]byte
	if err != nil {
		return appendErr(b[:0], id, err)
	}
	o := appendHead(b[:0], id, statusOK, enterResult)
	o = append(o, boolByte(resp.Processed))
	o = le.AppendUint64(o, uint64(resp.Balance))
	o = le.AppendUint64(o, uint64(resp.Version))
	o = le.AppendUint64(o, uint64(resp.Slow))
	return le.AppendUint64(o, uint64(resp.Entry))
}
