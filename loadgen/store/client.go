package store

// The client side of the store's protocol (wire.go): Client and the ways
// to dial one, its reader and the watchdog; its batching writer is in
// client_batch.go, the calls pending on it in client_call.go.

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
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

// Close closes the connection; calls in flight return an error. A
// sequenced client first sends the one-way frames still queued.
func (c *Client) Close() error {
	if c.seq.Load() != nil {
		_ = c.out.flush()
	}
	c.fail(net.ErrClosed)
	return nil
}
