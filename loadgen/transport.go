package loadgen

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"sync"
)

// Deliveries travel to an instance process as fixed-size binary records:
// payment, account, amount, intended start, worker, record flag, each
// little-endian. A record needs no codec state, so a batch is decoded with
// one read, and the coordinator's writer coalesces whatever the dispatcher
// has queued into one write.
const deliverySize = 8 + 4 + 8 + 8 + 4 + 1

var le = binary.LittleEndian

func putDelivery(b []byte, d Delivery) {
	_ = b[deliverySize-1]
	le.PutUint64(b[0:], uint64(d.Payment))
	le.PutUint32(b[8:], uint32(d.Account))
	le.PutUint64(b[12:], uint64(d.Amount))
	le.PutUint64(b[20:], uint64(d.IntendedNs))
	le.PutUint32(b[28:], uint32(d.Worker))
	b[32] = 0
	if d.Record {
		b[32] = 1
	}
}

func getDelivery(b []byte) Delivery {
	_ = b[deliverySize-1]
	return Delivery{
		Payment:    int64(le.Uint64(b[0:])),
		Account:    int32(le.Uint32(b[8:])),
		Amount:     int64(le.Uint64(b[12:])),
		IntendedNs: int64(le.Uint64(b[20:])),
		Worker:     int32(le.Uint32(b[28:])),
		Record:     b[32] != 0,
	}
}

// Batching bounds: the writer's queue holds deliveryQueue records (the
// dispatcher blocks beyond it, as on a full connection), and one write
// carries at most deliveryBatch of them (8 KB).
const (
	deliveryQueue = 1024
	deliveryBatch = 256
)

// errWriterClosed is returned by a deliveryWriter after Close or a failed
// write.
var errWriterClosed = errors.New("loadgen: delivery stream closed")

// deliveryWriter sends deliveries to one instance over w. Deliver queues a
// record; one goroutine writes every record queued by the time it is free,
// in one write. So at a low rate each delivery goes out at once, and at a
// high rate the cost of a write is shared by the records that queued
// while the last one was in flight. When the reader stops reading (its
// process is paused), the write blocks, the queue fills, and Deliver
// blocks: the back pressure of a real connection.
type deliveryWriter struct {
	w       io.Writer
	queue   chan [deliverySize]byte
	closing chan struct{}
	done    chan struct{} // closed when the writer goroutine has returned
	once    sync.Once
	err     error // the write error, read after done
}

func newDeliveryWriter(w io.Writer) *deliveryWriter {
	dw := &deliveryWriter{w: w, queue: make(chan [deliverySize]byte, deliveryQueue), closing: make(chan struct{}), done: make(chan struct{})}
	go dw.run()
	return dw
}

func (dw *deliveryWriter) run() {
	defer close(dw.done)
	buf := make([]byte, 0, deliveryBatch*deliverySize)
	for {
		var rec [deliverySize]byte
		select {
		case rec = <-dw.queue:
		case <-dw.closing:
			// Send what was queued before Close, then stop.
			buf = buf[:0]
			for {
				select {
				case rec = <-dw.queue:
					buf = append(buf, rec[:]...)
					if len(buf) == cap(buf) {
						if dw.write(buf) != nil {
							return
						}
						buf = buf[:0]
					}
					continue
				default:
				}
				break
			}
			_ = dw.write(buf)
			return
		}
		buf = append(buf[:0], rec[:]...)
	more:
		for len(buf) < cap(buf) {
			select {
			case rec = <-dw.queue:
				buf = append(buf, rec[:]...)
			default:
				break more
			}
		}
		if dw.write(buf) != nil {
			return
		}
	}
}

func (dw *deliveryWriter) write(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	_, err := dw.w.Write(b)
	if err != nil {
		dw.err = err
	}
	return err
}

// Deliver queues d, blocking while the queue is full.
func (dw *deliveryWriter) Deliver(ctx context.Context, d Delivery) error {
	var rec [deliverySize]byte
	putDelivery(rec[:], d)
	select {
	case dw.queue <- rec:
		return nil
	default:
	}
	select {
	case dw.queue <- rec:
		return nil
	case <-dw.done:
		return errWriterClosed
	case <-dw.closing:
		return errWriterClosed
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close sends what is queued and stops the writer; it does not close w.
// Done is closed when it has.
func (dw *deliveryWriter) Close() { dw.once.Do(func() { close(dw.closing) }) }

// Done is closed once the writer has stopped.
func (dw *deliveryWriter) Done() <-chan struct{} { return dw.done }

// readDeliveries decodes records from r and hands each to deliver until r
// ends (EOF: the coordinator is done with this instance) or fails.
func readDeliveries(r io.Reader, deliver func(Delivery)) error {
	br := bufio.NewReaderSize(r, deliveryBatch*deliverySize)
	var rec [deliverySize]byte
	for {
		if _, err := io.ReadFull(br, rec[:]); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		deliver(getDelivery(rec[:]))
	}
}
