package store

// The serving side of the store's protocol (wire.go): Serve and its
// options, each connection's reader and the coalescer that writes its
// answers, and ListenLocal.

import (
	"bufio"
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"

	"github.com/lockbench/lockbench/internal/handshake"
)

// Serve serves s on ln until ln is closed, running every call as it
// arrives, concurrently with the others (a store behind a database).
func Serve(ln net.Listener, s Store) error { return ServeWith(ln, s, ServeOptions{}) }

// ServeOptions tune a served store.
type ServeOptions struct {
	// Inline runs each connection's calls one after another on the
	// goroutine that reads them, answering a batch of pipelined calls in
	// one write: for a store whose calls never wait (the memory store),
	// where a goroutine per call costs more than the call. The default is
	// off: a goroutine per call.
	Inline bool
	// Token, when set, is what every client must present (DialToken): a
	// connection with another is closed before any call. The default, "",
	// takes any.
	Token string
	// Seq, when set, applies the sequenced ops of every connection in
	// order; without it a sequenced op ends its connection. The default
	// is nil.
	Seq *Sequencer
	// Sync, when set, is the sync flag every Finish answer carries to an
	// arrival client (Client.Arrive): while it reports true, such a
	// client's Enters wait for their answers. The default, nil, is never.
	Sync func() bool
}

// HandshakeTimeout is how long a served store waits for a connection's
// hello (the protocol's magic, version and token, wire.go) before it
// closes it: handshake.Timeout, 5 seconds. After the hello a connection
// may be idle as long as its client keeps it.
const HandshakeTimeout = handshake.Timeout

// MaxPending bounds the connections a served store holds before their
// hellos are read: handshake.MaxPending, 512. Beyond it the oldest is
// closed to make room, so that silent connections never keep an instance
// out.
const MaxPending = handshake.MaxPending

// ServeWith serves s on ln until ln is closed. A connection that has not
// sent its hello within HandshakeTimeout is closed, and so is the oldest
// of more than MaxPending such connections.
func ServeWith(ln net.Listener, s Store, o ServeOptions) error {
	if o.Seq != nil {
		stop := o.Seq.watch()
		defer stop()
	}
	ln = handshake.NewListener(ln, HandshakeTimeout, MaxPending)
	for {
		conn, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			return err
		}
		// Registered before its first frame can be read: a gap waits
		// for every connection that may still send it.
		var sc *seqConn
		if o.Seq != nil {
			sc = o.Seq.connect()
		}
		go func() {
			_ = serveConn(conn, s, o, sc)
			if sc != nil {
				o.Seq.disconnect(sc)
			}
		}()
	}
}

// serveConn serves s on one connection until it is closed or a frame is
// malformed.
func serveConn(conn net.Conn, s Store, o ServeOptions, sc *seqConn) error {
	defer conn.Close()
	if tc, ok := handshake.Unwrap(conn).(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	br := bufio.NewReaderSize(conn, connBuffer)
	if err := readHello(conn, br, o); err != nil {
		return err
	}
	out := &coalescer{w: conn}
	if sc != nil {
		req := appendHead(nil, 0, statusMark, 0)
		o.Seq.setPoke(sc, func() { _ = out.send(req) })
	}
	c := &servedConn{s: s, o: o, sc: sc, br: br, out: out}
	// Inline answers wait in bw until no request is left buffered.
	bw := bufio.NewWriterSize(conn, connBuffer)
	c.send = out.send
	c.run = func(f func()) { go f() }
	if o.Inline {
		c.send = func(b []byte) error { _, err := bw.Write(b); return err }
		c.run = func(f func()) { f() }
	}
	c.ctx = context.Background()
	for {
		if _, err := io.ReadFull(br, c.head[:]); err != nil {
			return nil // closed
		}
		if err := c.dispatch(); err != nil {
			return err
		}
		if o.Inline && br.Buffered() == 0 {
			if err := bw.Flush(); err != nil {
				return err
			}
		}
	}
}

// readHello reads a connection's hello (the magic, the version and the
// token) and checks it.
func readHello(conn net.Conn, br *bufio.Reader, o ServeOptions) error {
	var hello [4]byte
	if _, err := io.ReadFull(br, hello[:]); err != nil {
		return err
	}
	if string(hello[:3]) != protoMagic || hello[3] != protoVersion {
		return fmt.Errorf("store: protocol mismatch: got %q, want %s%d", hello[:], protoMagic, protoVersion)
	}
	token, err := readKey(br, nil)
	if err != nil {
		return err
	}
	if o.Token != "" && subtle.ConstantTimeCompare(token, []byte(o.Token)) != 1 {
		return errors.New("store: client with a bad token")
	}
	if !handshake.Done(conn) {
		return errHandshakeLate
	}
	return nil
}

// servedConn is the state of one connection serveConn serves: set up
// before its first request, then read and written only by its reader,
// except s, o, ctx and send, which the calls run reads.
type servedConn struct {
	s   Store
	o   ServeOptions
	sc  *seqConn
	br  *bufio.Reader
	out *coalescer
	// send writes an answer; run runs a call (on a goroutine of its own
	// unless Inline).
	send func([]byte) error
	run  func(func())
	ctx  context.Context
	// The reader's buffers, reused from one request to the next: the
	// head (id and op), the key, and the fixed part.
	head [5]byte
	key  []byte
	f    [maxFixed]byte
	ac   *arriveConn // made on the connection's first arrival op
}

// dispatch reads the rest of the request whose head c.head holds and
// runs it by its op.
func (c *servedConn) dispatch() error {
	id, op := le.Uint32(c.head[:]), c.head[4]
	var err error
	if c.key, err = readKey(c.br, c.key); err != nil {
		return err
	}
	switch op {
	case opEnter:
		return c.enter(id)
	case opFinish:
		return c.finish(id)
	case opEnterArrive, opFinishArrive:
		if c.ac == nil {
			c.ac = &arriveConn{reads: map[uint32]arriveRead{}}
		}
		return serveArrive(c.ctx, c.br, op, id, string(c.key), c.f[:], c.ac, c.s, c.o, c.send)
	case opEnterSeq, opEnterSeqWait, opFinishSeq, opSeqMark:
		if c.sc == nil {
			return fmt.Errorf("store: sequenced op %d on a store served without a Sequencer", op)
		}
		return readSeq(c.br, op, id, string(c.key), c.f[:], c.sc, c.o.Seq, c.out.send)
	default:
		return fmt.Errorf("store: unknown op %d", op)
	}
}

// enter reads the fixed part of Enter id and runs it.
func (c *servedConn) enter(id uint32) error {
	f := &c.f
	if _, err := io.ReadFull(c.br, f[:enterFixed]); err != nil {
		return err
	}
	r := EnterReq{LockKey: string(c.key),
		Token: int64(le.Uint64(f[0:])), Payment: int64(le.Uint64(f[8:])),
		Account: int32(le.Uint32(f[16:])), Instance: int(int32(le.Uint32(f[20:]))),
		Worker: int32(le.Uint32(f[24:])), Waiting: true}
	c.run(func() {
		resp, err := c.s.Enter(c.ctx, r)
		_ = c.send(appendEnterAnswer(id, resp, err))
	})
	return nil
}

// finish reads the fixed part of Finish id and runs it.
func (c *servedConn) finish(id uint32) error {
	f := &c.f
	if _, err := io.ReadFull(c.br, f[:finishFixed]); err != nil {
		return err
	}
	r := FinishReq{LockKey: string(c.key),
		Token: int64(le.Uint64(f[0:])), Payment: int64(le.Uint64(f[8:])),
		Account: int32(le.Uint32(f[16:])), Apply: f[20] != 0,
		Debit: int64(le.Uint64(f[21:])), BaseVersion: int64(le.Uint64(f[29:])), NewBalance: int64(le.Uint64(f[37:])),
		Entry: int64(le.Uint64(f[45:]))}
	c.run(func() {
		resp, err := c.s.Finish(c.ctx, r)
		var b [5 + 2 + 1]byte
		_ = c.send(appendFinishAnswer(b[:0], id, resp, err, c.o))
	})
	return nil
}

// errHandshakeLate ends a connection whose hello came after the listener
// had closed it (HandshakeTimeout, MaxPending).
var errHandshakeLate = errors.New("store: connection closed before its hello was read")

// coalescer writes frames to w from many goroutines, coalescing them: a
// sender that finds a write in flight appends its frame to the queue and
// returns; the writer sends the whole queue when its write returns.
type coalescer struct {
	w       io.Writer
	mu      sync.Mutex
	frames  doubleBuf
	writing bool
	err     error
}

// send queues b (copied) and, unless a write is in flight, writes it and
// whatever queues meanwhile. It returns the connection's write error.
func (c *coalescer) send(b []byte) error {
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		return err
	}
	c.frames.queue = append(c.frames.queue, b...)
	if c.writing {
		c.mu.Unlock()
		return nil
	}
	c.writing = true
	for len(c.frames.queue) > 0 {
		buf := c.frames.take()
		c.mu.Unlock()
		_, err := c.w.Write(buf)
		c.mu.Lock()
		c.frames.written(buf)
		if err != nil {
			c.err = err
			break
		}
	}
	c.writing = false
	err := c.err
	c.mu.Unlock()
	return err
}

// localSeq numbers the sockets ListenLocal makes in this process.
var localSeq atomic.Int64

// ListenLocal listens for instance processes on this machine: on an
// abstract Unix socket (Linux; no file to clean up, reachable only from
// this network namespace), whose Addr, prefixed "unix:", Dial takes. A
// write on it costs a fraction of one through the loopback TCP stack, and
// every critical section makes two. Where abstract sockets are not to be
// had it falls back to TCP on 127.0.0.1. Its Addr().String() is what Dial
// takes.
func ListenLocal() (net.Listener, error) {
	name := fmt.Sprintf("@lockbench-store-%d-%d", os.Getpid(), localSeq.Add(1))
	if ln, err := net.Listen("unix", name); err == nil {
		return localListener{ln}, nil
	}
	return net.Listen("tcp", "127.0.0.1:0")
}

// localListener names its Unix address as Dial takes it.
type localListener struct{ net.Listener }

func (l localListener) Addr() net.Addr { return localAddr{l.Listener.Addr()} }

type localAddr struct{ net.Addr }

func (a localAddr) String() string { return "unix:" + a.Addr.String() }
