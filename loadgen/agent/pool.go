package agent

import (
	"context"
	"errors"
	"fmt"
	"net"

	"github.com/lockbench/lockbench/loadgen/store"
)

// Pool is a coordinator's sessions with its agents: instances are placed
// on them round robin.
type Pool struct {
	conns []*Conn
	cfg   PoolConfig
}

// PoolConfig is a Pool's.
type PoolConfig struct {
	DialConfig
	// StoreHost is where the coordinator serves its store to the agents'
	// instances; empty: on each agent's route, the coordinator's own
	// address towards it (Conn.LocalIP).
	StoreHost string
}

// Open connects to every agent in targets (SplitAddrs's); an agent that
// cannot be reached or refuses fails it whole. With TLS, an agent whose
// target has a name is checked against that name, else its address.
func Open(ctx context.Context, targets []Target, cfg PoolConfig) (*Pool, error) {
	if len(targets) == 0 {
		return nil, ErrNoAgents
	}
	p := &Pool{cfg: cfg}
	for _, t := range targets {
		dc := cfg.DialConfig
		if dc.TLS != nil && dc.TLS.ServerName == "" && t.Name != "" {
			dc.TLS = dc.TLS.Clone()
			dc.TLS.ServerName = t.Name
		}
		c, err := Dial(ctx, t.Addr, dc)
		if err != nil {
			p.Close()
			return nil, err
		}
		p.conns = append(p.conns, c)
	}
	return p, nil
}

// Conns are the pool's sessions, in --agents order.
func (p *Pool) Conns() []*Conn { return p.conns }

// Close ends every session.
func (p *Pool) Close() error {
	for _, c := range p.conns {
		_ = c.Close()
	}
	return nil
}

// StoreAddrs is, per agent, where its instances reach a store served on
// the listeners Listen returned.
type StoreAddrs map[*Conn]string

// Listen listens for the instances' store connections: on StoreHost, or
// on each distinct local address the agents are reached from (never on
// every interface). It returns the listeners and, per agent, the address
// its instances dial. When the agent link is TLS the store link is too
// (store.ListenPinned).
func (p *Pool) Listen() ([]net.Listener, StoreAddrs, error) {
	var lns []net.Listener
	addrs := StoreAddrs{}
	byHost := map[string]string{}
	for _, c := range p.conns {
		host := p.cfg.StoreHost
		if host == "" {
			if c.LocalIP() == nil {
				closeAll(lns)
				return nil, nil, fmt.Errorf("agent %s: no local address to serve the store on; set the store host", c.addr)
			}
			host = c.LocalIP().String()
		}
		if a, ok := byHost[host]; ok {
			addrs[c] = a
			continue
		}
		ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
		if err != nil {
			closeAll(lns)
			return nil, nil, fmt.Errorf("store for agent %s: %w", c.addr, err)
		}
		addr := ln.Addr().String()
		if p.cfg.TLS != nil {
			// The agent link is TLS: so is the store link, with a
			// certificate the agents learn over the agent link.
			tln, taddr, err := store.ListenPinned(ln)
			if err != nil {
				closeAll(append(lns, ln))
				return nil, nil, err
			}
			ln, addr = tln, taddr
		}
		lns = append(lns, ln)
		byHost[host] = addr
		addrs[c] = addr
	}
	return lns, addrs, nil
}

func closeAll(lns []net.Listener) {
	for _, ln := range lns {
		_ = ln.Close()
	}
}

// pick picks the agent of instance id of n: round robin over the pool,
// and how many of the n it gets (for its GOMAXPROCS share).
func (p *Pool) pick(id, n int) (c *Conn, share int) {
	k := len(p.conns)
	i := id % k
	share = n / k
	if i < n%k {
		share++
	}
	return p.conns[i], share
}

// ErrNoAgents is returned for an empty pool.
var ErrNoAgents = errors.New("agent: no agents")
