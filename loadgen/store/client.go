package store

// The client side of the store's protocol (wire.go): Client and the ways
// to dial one, its batching writer, its reader, the watchdog and the calls
// pending on it.

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// DialTimeout bounds connecting to a served store: 3 seconds.
const DialTimeout = 3 * time.Second

// CallTimeout bounds a call whose context has no deadline: 10 seconds.
const CallTimeout = 10 * time.Second

// Client reaches a served store over one pipelined connection. It is safe
// for concurrent use: concurrent calls share the connection's writes and
// reads (see the protocol in wire.go). A broken connection fails every
// call in flight and every later one: a store that went away is not
// quietly reconnected to mid-run.
type Client struct {
	conn net.Conn
	out  *batchWriter

	mu      sync.Mutex
	pending map[uint32]*pendingCall
	nextID  uint32
	// tick counts the watchdog's ticks; a call that has waited
	// watchTicks of them is failed (CallTimeout), without a timer per
	// call.
	tick uint32
	// seq is set by Sequence, before any call; atomic because the
	// reader (mark) may look at it first.
	seq atomic.Pointer[clientSeq]
	// arrive is set by Arrive, before any call.
	arrive atomic.Pointer[clientArrive]
	err    error // set once the connection broke or was closed
	quit   chan struct{}
	once   sync.Once
}

// The watchdog ticks every CallTimeout/watchTicks: a call that gets no
// answer fails between 9 and 10 seconds after it was sent.
const watchTicks = 10

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

// pendingCall is one call in flight; done receives once its answer is in.
type pendingCall struct {
	done   chan struct{}
	tick   uint32 // Client.tick when it was sent
	status byte
	body   [enterResult]byte // the largest result
	msg    string
}

var callPool = sync.Pool{New: func() any { return &pendingCall{done: make(chan struct{}, 1)} }}

// Dial connects to a store served at addr: HOST:PORT over TCP, unix:NAME
// over a Unix socket (as ListenLocal gives), or tls:PIN@HOST:PORT over TLS
// (as ListenPinned gives).
func Dial(ctx context.Context, addr string) (*Client, error) { return DialToken(ctx, addr, "") }

// DialToken is Dial presenting token (ServeOptions.Token).
func DialToken(ctx context.Context, addr, token string) (*Client, error) {
	d := &net.Dialer{Timeout: DialTimeout}
	return dialWith(ctx, addr, token, func(ctx context.Context, addr string) (net.Conn, error) {
		if name, ok := strings.CutPrefix(addr, "unix:"); ok {
			return d.DialContext(ctx, "unix", name)
		}
		if rest, ok := strings.CutPrefix(addr, pinnedPrefix); ok {
			return dialPinned(ctx, d, rest)
		}
		return d.DialContext(ctx, "tcp", addr)
	})
}

// DialWith is Dial over a connection made by dial (TLS, say).
func DialWith(ctx context.Context, addr string, dial func(ctx context.Context, addr string) (net.Conn, error)) (*Client, error) {
	return dialWith(ctx, addr, "", dial)
}

func dialWith(ctx context.Context, addr, token string, dial func(ctx context.Context, addr string) (net.Conn, error)) (*Client, error) {
	dctx, cancel := context.WithTimeout(ctx, DialTimeout)
	defer cancel()
	conn, err := dial(dctx, addr)
	if err != nil {
		return nil, fmt.Errorf("store: dial %s: %w", addr, err)
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	// The hello is the magic, then the version and the token laid out as
	// an op byte and its key.
	hello := appendKey([]byte(protoMagic), protoVersion, token)
	if _, err := conn.Write(hello); err != nil {
		conn.Close()
		return nil, fmt.Errorf("store: dial %s: %w", addr, err)
	}
	c := &Client{conn: conn, out: newBatchWriter(conn), pending: map[uint32]*pendingCall{}, quit: make(chan struct{})}
	go c.read()
	go c.out.run()
	go c.watch()
	return c, nil
}

// read hands each answer to its caller until the connection ends.
func (c *Client) read() {
	br := bufio.NewReaderSize(c.conn, connBuffer)
	var head [7]byte
	var msg []byte
	var err error
	for {
		if _, err = io.ReadFull(br, head[:]); err != nil {
			break
		}
		id, status, n := le.Uint32(head[:]), head[4], int(le.Uint16(head[5:]))
		if cap(msg) < n {
			msg = make([]byte, n)
		}
		msg = msg[:n]
		if _, err = io.ReadFull(br, msg); err != nil {
			break
		}
		if id == 0 && status == statusMark {
			c.mark()
			continue
		}
		c.mu.Lock()
		cl := c.pending[id]
		delete(c.pending, id)
		c.mu.Unlock()
		if cl == nil {
			continue // its caller gave up
		}
		cl.status = status
		if status == statusOK {
			copy(cl.body[:], msg)
		} else {
			cl.msg = string(msg)
		}
		cl.done <- struct{}{}
	}
	c.fail(fmt.Errorf("store: connection lost: %w", err))
}

// watch fails the calls that have waited CallTimeout for their answer.
func (c *Client) watch() {
	t := time.NewTicker(CallTimeout / watchTicks)
	defer t.Stop()
	for {
		select {
		case <-c.quit:
			return
		case <-t.C:
		}
		c.mu.Lock()
		c.tick++
		for id, cl := range c.pending {
			if c.tick-cl.tick >= watchTicks {
				delete(c.pending, id)
				cl.status = statusTimeout
				cl.done <- struct{}{}
			}
		}
		c.mu.Unlock()
	}
}

// Statuses a call gets on the client's side.
const (
	statusLost    = 255 // the connection broke
	statusTimeout = 254 // no answer within CallTimeout
)

// fail ends the connection with err: every call in flight returns it.
func (c *Client) fail(err error) {
	c.mu.Lock()
	if c.err == nil {
		c.err = err
	}
	pending := c.pending
	c.pending = map[uint32]*pendingCall{}
	c.mu.Unlock()
	c.once.Do(func() { close(c.quit) })
	_ = c.conn.Close()
	c.out.close()
	for _, cl := range pending {
		cl.status = statusLost
		cl.done <- struct{}{}
	}
}

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

// Close closes the connection; calls in flight return an error. A
// sequenced client first sends the one-way frames still queued.
func (c *Client) Close() error {
	if c.seq.Load() != nil {
		_ = c.out.flush()
	}
	c.fail(net.ErrClosed)
	return nil
}
