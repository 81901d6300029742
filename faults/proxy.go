package faults

import (
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/rs/zerolog"
)

// proxy is an in-process toxiproxy TCP proxy in front of one server, on a
// free loopback port. Clients pointed at Addr reach the server until the
// fault cuts, delays or refuses their traffic.
type proxy struct {
	p        *toxiproxy.Proxy
	upstream string

	mu     sync.Mutex
	toxics []string // names of the toxics in place
}

// toxiServer is the toxiproxy server every proxy hangs off: it only holds
// their logger and (disabled) metrics, it serves no API.
var toxiServer = sync.OnceValue(func() *toxiproxy.ApiServer {
	return toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
})

// newProxy starts a proxy to upstream (host:port).
func newProxy(name, upstream string) (*proxy, error) {
	p := toxiproxy.NewProxy(toxiServer(), name, "127.0.0.1:0", upstream)
	if err := p.Start(); err != nil {
		return nil, fmt.Errorf("proxy for %s: %w", upstream, err)
	}
	return &proxy{p: p, upstream: upstream}, nil
}

// Addr is where clients connect: 127.0.0.1:port, fixed for the proxy's life.
func (x *proxy) Addr() string {
	x.p.Lock()
	defer x.p.Unlock()
	return x.p.Listen
}

func (x *proxy) addToxic(name, kind, stream string, attrs string) error {
	body := fmt.Sprintf(`{"name":%q,"type":%q,"stream":%q,"toxicity":1,"attributes":%s}`, name, kind, stream, attrs)
	if _, err := x.p.Toxics.AddToxicJson(strings.NewReader(body)); err != nil {
		return fmt.Errorf("proxy for %s: add %s toxic: %w", x.upstream, kind, err)
	}
	x.toxics = append(x.toxics, name)
	return nil
}

// cut drops every byte both ways, on open connections and new ones alike:
// a black hole, as a network partition looks to both ends. Connections are
// accepted and then hang; clients notice only through their own timeouts.
func (x *proxy) cut() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, s := range []string{"upstream", "downstream"} {
		if err := x.addToxic("cut-"+s, "timeout", s, `{"timeout":0}`); err != nil {
			return err
		}
	}
	return nil
}

// delay holds every reply for d.
func (x *proxy) delay(d time.Duration) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.addToxic("delay", "latency", "downstream", fmt.Sprintf(`{"latency":%d,"jitter":0}`, d.Milliseconds()))
}

// heal removes the toxics. After a cut it also closes the connections that
// lived through it: bytes were dropped mid-stream, so their protocol state
// is lost (a real partition's retransmissions would have kept it), and a
// client reusing one could wait forever.
func (x *proxy) heal() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if len(x.toxics) == 0 {
		return nil
	}
	wasCut := false
	for _, name := range x.toxics {
		wasCut = wasCut || strings.HasPrefix(name, "cut-")
		if err := x.p.Toxics.RemoveToxic(context.Background(), name); err != nil {
			return fmt.Errorf("proxy for %s: remove toxic %s: %w", x.upstream, name, err)
		}
	}
	x.toxics = nil
	if wasCut {
		x.p.Stop()
		return x.refuseOff()
	}
	return nil
}

// refuse closes the proxy's listener and its connections: the server is
// unreachable at once (connection refused), as when a firewall rejects.
func (x *proxy) refuse() { x.p.Stop() }

// accept undoes refuse: the proxy listens again, on the same port.
func (x *proxy) accept() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.refuseOff()
}

func (x *proxy) refuseOff() error {
	if err := x.p.Start(); err != nil && err != toxiproxy.ErrProxyAlreadyStarted {
		return fmt.Errorf("proxy for %s: listen again: %w", x.upstream, err)
	}
	return nil
}

// close stops the proxy for good.
func (x *proxy) close() { x.p.Stop() }

// resetProxy is a plain TCP forwarder in front of one server, for
// partition's mode=reset. Unlike toxiproxy it can close every connection it
// carries while it keeps listening: toxiproxy drops its connections only by
// stopping its listener, and a client that reconnects in the moment before
// it listens again is refused, which would make the fault's outcome a
// matter of timing.
type resetProxy struct {
	ln       net.Listener
	upstream string
	wg       sync.WaitGroup // the accept loop and the pipes

	mu       sync.Mutex
	conns    map[*net.TCPConn]struct{} // both sockets of every connection
	refusing bool
	closed   bool
}

// resetDialTimeout bounds the proxy's connection to the server: 5s.
const resetDialTimeout = 5 * time.Second

// newResetProxy starts a forwarder to upstream (host:port) on a free
// loopback port.
func newResetProxy(upstream string) (*resetProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("proxy for %s: %w", upstream, err)
	}
	x := &resetProxy{ln: ln, upstream: upstream, conns: map[*net.TCPConn]struct{}{}}
	x.wg.Add(1)
	go x.serve()
	return x, nil
}

// Addr is where clients connect: 127.0.0.1:port, fixed for the proxy's life.
func (x *resetProxy) Addr() string { return x.ln.Addr().String() }

func (x *resetProxy) serve() {
	defer x.wg.Done()
	for {
		c, err := x.ln.Accept()
		if err != nil {
			return // closed
		}
		client := c.(*net.TCPConn)
		x.mu.Lock()
		refusing := x.refusing || x.closed
		x.mu.Unlock()
		if refusing {
			rst(client)
			continue
		}
		x.wg.Add(1)
		go x.forward(client)
	}
}

// forward connects client to the server and copies both ways until either
// side closes, or reset closes both.
func (x *resetProxy) forward(client *net.TCPConn) {
	defer x.wg.Done()
	c, err := net.DialTimeout("tcp", x.upstream, resetDialTimeout)
	if err != nil {
		rst(client)
		return
	}
	server := c.(*net.TCPConn)
	if !x.track(client, server) {
		rst(client)
		rst(server)
		return
	}
	done := make(chan struct{}, 2)
	pipe := func(dst, src *net.TCPConn) {
		_, _ = io.Copy(dst, src)
		done <- struct{}{}
	}
	go pipe(server, client)
	go pipe(client, server)
	<-done
	// One side is gone: so is the connection. Closing both ends the other
	// copy.
	x.untrack(client, server)
	client.Close()
	server.Close()
	<-done
}

// track records a connection's sockets; false once the proxy refuses or is
// closed (a reset must not miss them).
func (x *resetProxy) track(cs ...*net.TCPConn) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.refusing || x.closed {
		return false
	}
	for _, c := range cs {
		x.conns[c] = struct{}{}
	}
	return true
}

func (x *resetProxy) untrack(cs ...*net.TCPConn) {
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, c := range cs {
		delete(x.conns, c)
	}
}

// reset closes every connection through the proxy with a TCP RST, both
// ways, so that the client and the server see "connection reset by peer"
// at once (a client's next write fails instead of seeming to succeed). With
// refuse, new connections are reset as they arrive until accept; without,
// they are served at once.
func (x *resetProxy) reset(refuse bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.refusing = refuse
	for c := range x.conns {
		rst(c)
	}
	clear(x.conns)
}

// accept ends the refusal of reset(true).
func (x *resetProxy) accept() {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.refusing = false
}

// close stops the proxy for good: the listener and every connection.
func (x *resetProxy) close() {
	x.mu.Lock()
	x.closed = true
	for c := range x.conns {
		rst(c)
	}
	clear(x.conns)
	x.mu.Unlock()
	x.ln.Close()
	x.wg.Wait()
}

// rst closes c with a TCP RST rather than a FIN (SO_LINGER 0).
func rst(c *net.TCPConn) {
	_ = c.SetLinger(0)
	_ = c.Close()
}
