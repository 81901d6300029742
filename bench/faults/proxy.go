package faults

import (
	"context"
	"fmt"
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
