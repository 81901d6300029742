package store

// The store's wire format, shared by the server (server.go) and the client
// (client.go): the protocol's constants, its frame layouts and the helpers
// that encode and decode them, and the frame queue both sides' writers use.

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
)

// The store's wire protocol (see Wire protocol in the package doc). A
// connection opens with protoMagic, the protocol version and a token (u16
// length, bytes; empty for none). A request is a u32 id, an op byte, the
// lock key (u16 length, bytes), then the op's fixed fields; a response is
// the u32 id, a status byte, a u16 length and the body (the op's fixed
// result, or the error message); all little-endian. One-way ops have id 0.
const (
	protoMagic   = "LBS"
	protoVersion = 7

	opEnter        = 1
	opFinish       = 2
	opEnterSeq     = 3
	opFinishSeq    = 4
	opEnterSeqWait = 5
	// opSeqMark is a client's mark (Sequencer.watch), answering a mark
	// request: a frame of id 0 and status statusMark from the server.
	opSeqMark = 6

	statusOK   = 0
	statusErr  = 1
	statusMark = 2

	// maxKey bounds a lock key on the wire, and a token: 4 KB.
	maxKey = 4096
	// connBuffer is each side's read buffer: 64 KB.
	connBuffer = 64 << 10
)

// ServerError is an error the served store returned, as the caller sees it.
type ServerError string

func (e ServerError) Error() string { return string(e) }

// knownErrors are the store's sentinel errors, returned as themselves
// across the connection so that errors.Is works for callers of a Client
// as it does for callers of the store.
var knownErrors = []error{errUnknownPayment, errFinishWithoutEnter, errNegativeBase, errBaseAhead}

func remoteError(msg string) error {
	for _, e := range knownErrors {
		if e.Error() == msg {
			return e
		}
	}
	return ServerError(msg)
}

var le = binary.LittleEndian

// Fixed field sizes after the key: Enter's token, payment, account,
// instance, worker; Finish's token, payment, account, apply, debit, base
// version, new balance, entry. enterResult is Enter's result: processed,
// balance, version, slow (ns), entry.
// enterSeqFixed and finishSeqFixed are the sequenced ops': seq, token,
// payment, account, instance, slot, time, worker; seq, token, payment,
// account, slot, amount, time. maxFixed is the largest of every op's.
const (
	enterFixed     = 8 + 8 + 4 + 4 + 4
	finishFixed    = 8 + 8 + 4 + 1 + 8 + 8 + 8 + 8
	enterResult    = 1 + 8 + 8 + 8 + 8
	enterSeqFixed  = 8 + 8 + 8 + 4 + 4 + 4 + 8 + 4
	finishSeqFixed = 8 + 8 + 8 + 4 + 4 + 8 + 8
	maxFixed       = finishFixed
)

func boolByte(b bool) byte {
	if b {
		return 1
	}
	return 0
}

func readKey(br *bufio.Reader, key []byte) ([]byte, error) {
	var n [2]byte
	if _, err := io.ReadFull(br, n[:]); err != nil {
		return key, err
	}
	l := int(le.Uint16(n[:]))
	if l > maxKey {
		return key, fmt.Errorf("store: lock key of %d bytes", l)
	}
	if cap(key) < l {
		key = make([]byte, l)
	}
	key = key[:l]
	_, err := io.ReadFull(br, key)
	return key, err
}

func appendHead(b []byte, id uint32, status byte, n int) []byte {
	b = le.AppendUint32(b, id)
	b = append(b, status)
	return le.AppendUint16(b, uint16(n))
}

func appendErr(b []byte, id uint32, err error) []byte {
	msg := err.Error()
	if len(msg) > 65535 {
		msg = msg[:65535]
	}
	return append(appendHead(b, id, statusErr, len(msg)), msg...)
}

func appendKey(b []byte, op byte, key string) []byte {
	b = append(b, op)
	b = le.AppendUint16(b, uint16(min(len(key), maxKey)))
	return append(b, key[:min(len(key), maxKey)]...)
}

// doubleBuf is a queue of frames in two buffers: senders append to queue
// while the other buffer, taken, is written; the written one comes back as
// the spare.
type doubleBuf struct{ queue, spare []byte }

// take returns what is queued and starts a new queue in the spare.
func (d *doubleBuf) take() []byte {
	buf := d.queue
	d.queue = d.spare[:0]
	return buf
}

// written gives back buf, taken and written, as the spare.
func (d *doubleBuf) written(buf []byte) { d.spare = buf[:0] }
