package agent

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockbench/lockbench/loadgen"
)

// PingEvery is how often a coordinator pings each agent: 1 second. An
// agent that has not answered for LostAfter is lost.
const PingEvery = time.Second

// LostAfter is how long a coordinator waits for an agent's answer before
// it takes the agent for lost: 5 seconds.
const LostAfter = 5 * time.Second

// clockSamples is how many round trips the clock offset is taken from:
// the one with the shortest round trip wins (NTP's rule: its midpoint is
// the least uncertain).
const clockSamples = 8

// DialConfig is how a coordinator reaches its agents.
type DialConfig struct {
	// Token is the shared token (TokenEnv).
	Token string
	// TLS, when set, is the client side of TLS (RootCAs to verify agents,
	// Certificates for mutual TLS); ServerName is set per agent from its
	// address when empty.
	TLS *tls.Config
	// Log receives one line per agent connected and per agent lost.
	Log io.Writer
}

// Conn is a coordinator's session with one agent: its control connection,
// the agent's clock offset, and the instance connections made through it.
type Conn struct {
	addr   string
	cfg    DialConfig
	reply  helloReply
	local  net.IP // this host's address on the way to the agent
	offset int64  // the agent's clock minus ours, ns
	// uncertainty bounds the offset's error: half the round trip it was
	// taken from, ns.
	uncertainty int64

	ctrl    net.Conn
	wmu     sync.Mutex // one request written at a time
	enc     *gob.Encoder
	bw      *bufio.Writer
	mu      sync.Mutex
	pending map[uint64]chan reply
	nextID  uint64
	nextKey atomic.Uint64

	lost     chan struct{} // closed when the agent is lost or the session closed
	lostOnce sync.Once
	lostErr  error
	closed   atomic.Bool
	instMu   sync.Mutex
	insts    map[*Instance]struct{}
}

// Dial opens a session with the agent at addr (HOST:PORT), checks the
// handshake and agrees the clock offset.
func Dial(ctx context.Context, addr string, cfg DialConfig) (*Conn, error) {
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	c := &Conn{addr: addr, cfg: cfg, pending: map[uint64]chan reply{}, lost: make(chan struct{}), insts: map[*Instance]struct{}{}}
	conn, err := c.open(ctx, kindControl, &c.reply)
	if err != nil {
		return nil, err
	}
	c.ctrl = conn
	if ta, ok := conn.LocalAddr().(*net.TCPAddr); ok {
		c.local = ta.IP
	}
	c.bw = bufio.NewWriter(conn)
	c.enc = gob.NewEncoder(c.bw)
	go c.read()
	if err := c.agreeClock(ctx); err != nil {
		c.Close()
		return nil, fmt.Errorf("agent %s: clock: %w", addr, err)
	}
	go c.ping()
	return c, nil
}

// open connects, sends the hello and reads the answer into v.
func (c *Conn) open(ctx context.Context, kind byte, v any) (net.Conn, error) {
	d := net.Dialer{Timeout: HandshakeTimeout, KeepAlive: PingEvery}
	conn, err := d.DialContext(ctx, "tcp", c.addr)
	if err != nil {
		return nil, fmt.Errorf("agent %s: %w", c.addr, err)
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	if kind == kindInstance {
		boundStream(conn, (*net.TCPConn).SetWriteBuffer)
	}
	if c.cfg.TLS != nil {
		tc := c.cfg.TLS.Clone()
		if tc.ServerName == "" {
			host, _, _ := net.SplitHostPort(c.addr)
			tc.ServerName = host
		}
		conn = tls.Client(conn, tc)
	}
	_ = conn.SetDeadline(time.Now().Add(HandshakeTimeout))
	if err := writeHello(conn, hello{Protocol: Protocol, Kind: kind, Token: c.cfg.Token, Version: Version()}); err != nil {
		conn.Close()
		return nil, fmt.Errorf("agent %s: %w", c.addr, err)
	}
	if kind == kindInstance {
		return conn, nil // the spawn request goes first, then the answer
	}
	if err := readStatus(conn, v); err != nil {
		conn.Close()
		if errors.Is(err, io.EOF) {
			err = errors.New("connection closed during the handshake (not an agent, or TLS on one side only?)")
		}
		return nil, fmt.Errorf("agent %s: %w", c.addr, err)
	}
	_ = conn.SetDeadline(time.Time{})
	return conn, nil
}

// Addr is the agent's address.
func (c *Conn) Addr() string { return c.addr }

// Host is the agent's host name, as it said at the handshake.
func (c *Conn) Host() string { return c.reply.Host }

// CPUs is the agent's processor count.
func (c *Conn) CPUs() int { return c.reply.CPUs }

// ClockOffset is the agent's clock minus the coordinator's, agreed at the
// handshake.
func (c *Conn) ClockOffset() time.Duration { return time.Duration(c.offset) }

// LocalIP is this host's address on the route to the agent: where the
// agent's instances reach the coordinator's store.
func (c *Conn) LocalIP() net.IP { return c.local }

// Lost is closed once the agent is lost (or the session closed); Err then
// says why.
func (c *Conn) Lost() <-chan struct{} { return c.lost }

// Err is why the session ended, nil while it lasts.
func (c *Conn) Err() error {
	select {
	case <-c.lost:
		return c.lostErr
	default:
		return nil
	}
}

// Close ends the session: the agent kills whatever instances of it are
// left.
func (c *Conn) Close() error {
	c.closed.Store(true)
	c.fail(net.ErrClosed)
	return nil
}

// fail ends the session with err and cuts every instance connection.
func (c *Conn) fail(err error) {
	c.lostOnce.Do(func() {
		c.lostErr = err
		close(c.lost)
		_ = c.ctrl.Close()
		if !c.closed.Load() {
			fmt.Fprintf(c.cfg.Log, "lockbench: agent %s lost: %v; its instances' deliveries count as failed (%s)\n", c.addr, err, loadgen.ErrClassAgentLost)
		}
		c.instMu.Lock()
		for in := range c.insts {
			_ = in.conn.Close()
		}
		c.instMu.Unlock()
		c.mu.Lock()
		for id, ch := range c.pending {
			close(ch)
			delete(c.pending, id)
		}
		c.mu.Unlock()
	})
}

func (c *Conn) read() {
	dec := gob.NewDecoder(bufio.NewReader(c.ctrl))
	for {
		var r reply
		if err := dec.Decode(&r); err != nil {
			c.fail(fmt.Errorf("control connection: %w", err))
			return
		}
		c.mu.Lock()
		ch := c.pending[r.ID]
		delete(c.pending, r.ID)
		c.mu.Unlock()
		if ch != nil {
			ch <- r
		}
	}
}

// call sends a request and waits for its reply, at most LostAfter: an
// agent that does not answer by then is lost.
func (c *Conn) call(ctx context.Context, r request) (reply, error) {
	ch := make(chan reply, 1)
	c.mu.Lock()
	if c.Err() != nil {
		c.mu.Unlock()
		return reply{}, c.Err()
	}
	c.nextID++
	r.ID = c.nextID
	c.pending[r.ID] = ch
	c.mu.Unlock()
	c.wmu.Lock()
	_ = c.ctrl.SetWriteDeadline(time.Now().Add(LostAfter))
	err := c.enc.Encode(r)
	if err == nil {
		err = c.bw.Flush()
	}
	c.wmu.Unlock()
	if err != nil {
		c.fail(fmt.Errorf("control connection: %w", err))
		return reply{}, c.Err()
	}
	t := time.NewTimer(LostAfter)
	defer t.Stop()
	select {
	case rep, ok := <-ch:
		if !ok {
			return reply{}, c.Err()
		}
		if rep.Err != "" {
			return rep, fmt.Errorf("agent %s: %s", c.addr, rep.Err)
		}
		return rep, nil
	case <-t.C:
		c.fail(fmt.Errorf("no answer within %s", LostAfter))
		return reply{}, c.Err()
	case <-ctx.Done():
		c.mu.Lock()
		delete(c.pending, r.ID)
		c.mu.Unlock()
		return reply{}, ctx.Err()
	}
}

func (c *Conn) ping() {
	t := time.NewTicker(PingEvery)
	defer t.Stop()
	for {
		select {
		case <-c.lost:
			return
		case <-t.C:
		}
		_, _ = c.call(context.Background(), request{Op: opPing})
	}
}

// agreeClock takes the agent's clock offset from the round trip with the
// shortest time of clockSamples: offset = agent's time − the midpoint of
// our send and receive.
func (c *Conn) agreeClock(ctx context.Context) error {
	best := time.Duration(-1)
	for range clockSamples {
		t0 := time.Now()
		rep, err := c.call(ctx, request{Op: opClock})
		if err != nil {
			return err
		}
		t3 := time.Now()
		rtt := t3.Sub(t0)
		if best < 0 || rtt < best {
			best = rtt
			mid := t0.UnixNano() + int64(rtt)/2
			c.offset, c.uncertainty = rep.NowNs-mid, int64(rtt)/2
		}
	}
	return nil
}

// Signal sends SIGSTOP ("stop") or SIGCONT ("cont") to one instance of
// this session; the agent signals its own child and answers once it has.
func (c *Conn) signal(key uint64, sig string) error {
	_, err := c.call(context.Background(), request{Op: opSignal, Key: key, Signal: sig})
	return err
}

// Target is one agent of a --agents value: its address, and the name it
// was resolved from ("" for an address given as such), which TLS checks
// the agent's certificate against.
type Target struct {
	Addr string // IP:PORT
	Name string
}

// String is the target's address.
func (t Target) String() string { return t.Addr }

// SplitAddrs splits a --agents value (HOST:PORT,…) and resolves every
// host: a name with several addresses (a Kubernetes headless Service)
// stands for every one of them.
func SplitAddrs(ctx context.Context, list string) ([]Target, error) {
	var out []Target
	seen := map[string]bool{}
	for _, e := range strings.Split(list, ",") {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		host, port, err := net.SplitHostPort(e)
		if err != nil || host == "" || port == "" {
			return nil, fmt.Errorf("agent address %q: want HOST:PORT", e)
		}
		ips, name := []string{host}, ""
		if net.ParseIP(host) == nil {
			if ips, err = net.DefaultResolver.LookupHost(ctx, host); err != nil {
				return nil, fmt.Errorf("agent address %q: %w", e, err)
			}
			name = host
		}
		for _, ip := range ips {
			a := net.JoinHostPort(ip, port)
			if !seen[a] {
				seen[a] = true
				out = append(out, Target{Addr: a, Name: name})
			}
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no agent addresses")
	}
	return out, nil
}
