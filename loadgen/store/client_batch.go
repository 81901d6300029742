package store

import (
	"io"
	"net"
	"runtime"
	"sync"
	"time"
)

// batchWriter writes a client's requests on its own goroutine, so that
// the requests of workers woken together (by one read of their answers)
// leave in one write: send queues a frame and kicks the writer, which
// yields once before taking the queue, letting every worker that is
// already runnable queue its frame first. At a low rate that costs a
// goroutine switch per call; under load it saves a system call for
// nearly every one.
type batchWriter struct {
	w    io.Writer
	kick chan struct{}
	quit chan struct{}
	once sync.Once
	// stopped is closed when run has returned.
	stopped chan struct{}
	// lazy, when > 0, is how long a lazy frame (sendSeq's) may wait for
	// the writer: the timer kicks it that long after the first lazy frame
	// queued since the last kick (timerSet).
	lazy     time.Duration
	timer    *time.Timer
	timerSet bool
	mu       sync.Mutex
	frames   doubleBuf
	err      error
}

func newBatchWriter(w io.Writer) *batchWriter {
	return &batchWriter{w: w, kick: make(chan struct{}, 1), quit: make(chan struct{}), stopped: make(chan struct{})}
}

// send queues b (copied) for the writer; it returns the write error that
// ended the connection, if one has.
func (bw *batchWriter) send(b []byte) error {
	bw.mu.Lock()
	if bw.err != nil {
		err := bw.err
		bw.mu.Unlock()
		return err
	}
	bw.frames.queue = append(bw.frames.queue, b...)
	bw.mu.Unlock()
	select {
	case bw.kick <- struct{}{}:
	default: // already kicked: the frame goes with that write
	}
	return nil
}

// sendSeq is send for a sequenced frame: it writes the next number of p
// into b at off while holding the queue's lock, so that the frames of a
// connection are queued, sent and received in the order of their numbers
// (which the Sequencer's gap rule relies on). A lazy frame (one no caller
// waits on) with bw.lazy set does not wake the writer: it goes with the
// next frame that does, or when the lazy timer fires. A one-way frame
// costs a write of its own otherwise: a fifth system call in a cycle
// whose lock takes four.
func (bw *batchWriter) sendSeq(b []byte, off int, p *SeqPage, lazy bool) error {
	bw.mu.Lock()
	if bw.err != nil {
		err := bw.err
		bw.mu.Unlock()
		return err
	}
	le.PutUint64(b[off:], p.Next())
	bw.frames.queue = append(bw.frames.queue, b...)
	if lazy && bw.lazy > 0 {
		if !bw.timerSet {
			bw.timerSet = true
			bw.timer.Reset(bw.lazy)
		}
		bw.mu.Unlock()
		return nil
	}
	bw.mu.Unlock()
	bw.wake()
	return nil
}

// wake kicks the writer.
func (bw *batchWriter) wake() {
	select {
	case bw.kick <- struct{}{}:
	default:
	}
}

// setLazy lets lazy frames wait up to d for the writer.
func (bw *batchWriter) setLazy(d time.Duration) {
	bw.mu.Lock()
	defer bw.mu.Unlock()
	bw.lazy = d
	bw.timer = time.AfterFunc(d, func() {
		bw.mu.Lock()
		bw.timerSet = false
		bw.mu.Unlock()
		bw.wake()
	})
	bw.timer.Stop()
}

func (bw *batchWriter) run() {
	defer close(bw.stopped)
	for {
		select {
		case <-bw.kick:
		case <-bw.quit:
			return
		}
		runtime.Gosched()
		bw.mu.Lock()
		if len(bw.frames.queue) == 0 {
			bw.mu.Unlock()
			continue // its frame went with the last write
		}
		err := bw.writeQueue()
		bw.mu.Unlock()
		if err != nil {
			return
		}
	}
}

// writeQueue writes what is queued. The queue's lock is held; it is
// released during the write, and held again on return.
func (bw *batchWriter) writeQueue() error {
	// Swap the buffers: senders fill the spare while this one is written.
	buf := bw.frames.take()
	bw.mu.Unlock()
	_, err := bw.w.Write(buf)
	bw.mu.Lock()
	bw.frames.written(buf)
	if err != nil && bw.err == nil {
		bw.err = err
	}
	return bw.err
}

// flush stops the writer and writes what is still queued, on the
// caller's goroutine: a client whose frames are one-way (Client.Sequence)
// must not close with frames queued, which no answer waits for. Once it
// has, every later send fails (net.ErrClosed) before it takes a number:
// a number taken and never sent is a gap, and the page may be unmapped
// by then.
func (bw *batchWriter) flush() error {
	bw.close()
	<-bw.stopped
	bw.mu.Lock()
	defer bw.mu.Unlock()
	var err error
	if bw.err == nil && len(bw.frames.queue) > 0 {
		err = bw.writeQueue()
	} else {
		err = bw.err
	}
	if bw.err == nil {
		bw.err = net.ErrClosed
	}
	return err
}

func (bw *batchWriter) close() { bw.once.Do(func() { close(bw.quit) }) }
