package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// Instance is an instance process on an agent, as its coordinator drives
// it: deliveries are written to it, its reports read from it, and it is
// stopped and continued by its agent.
type Instance struct {
	c    *Conn
	key  uint64
	conn net.Conn

	mu     sync.Mutex
	closed bool
}

// Spawn starts an instance process on the agent: conf is its
// configuration (loadgen's, passed on unread) and procs its GOMAXPROCS
// (0: the agent's choice).
func (c *Conn) Spawn(ctx context.Context, conf []byte, procs int) (*Instance, error) {
	if err := c.Err(); err != nil {
		return nil, fmt.Errorf("agent %s: %w", c.addr, err)
	}
	conn, err := c.open(ctx, kindInstance, nil)
	if err != nil {
		return nil, err
	}
	in := &Instance{c: c, key: c.nextKey.Add(1), conn: conn}
	if err := writeSpawn(conn, spawnReq{Session: c.reply.Session, Key: in.key, Config: conf, Procs: procs}); err != nil {
		conn.Close()
		return nil, fmt.Errorf("agent %s: %w", c.addr, err)
	}
	if err := readStatus(conn, nil); err != nil {
		conn.Close()
		return nil, fmt.Errorf("agent %s: %w", c.addr, err)
	}
	_ = conn.SetDeadline(time.Time{})
	c.instMu.Lock()
	c.insts[in] = struct{}{}
	c.instMu.Unlock()
	if c.Err() != nil {
		// Lost meanwhile: fail cut the others, cut this one too.
		conn.Close()
	}
	return in, nil
}

// Stdin takes the instance's deliveries; closing it closes the
// connection's sending side only (the instance drains, reports and
// exits).
func (in *Instance) Stdin() io.WriteCloser { return halfCloser{in.conn} }

// Stdout is the instance's reports.
func (in *Instance) Stdout() io.Reader { return in.conn }

type halfCloser struct{ net.Conn }

func (h halfCloser) Close() error {
	if cw, ok := h.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return h.Conn.Close()
}

// Pause stops the instance process (SIGSTOP, sent by its agent), and
// returns once the agent has.
func (in *Instance) Pause() error { return in.c.signal(in.key, "stop") }

// Resume continues it (SIGCONT).
func (in *Instance) Resume() error { return in.c.signal(in.key, "cont") }

// Kill cuts the instance's connection: its agent kills it.
func (in *Instance) Kill() { _ = in.Close() }

// Close closes the connection and forgets the instance.
func (in *Instance) Close() error {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.closed {
		return nil
	}
	in.closed = true
	in.c.instMu.Lock()
	delete(in.c.insts, in)
	in.c.instMu.Unlock()
	return in.conn.Close()
}

// Wait closes the connection once the instance's reports have been read
// to their end; it returns why the agent was lost, if it was.
func (in *Instance) Wait() error {
	_ = in.Close()
	if err := in.c.Err(); err != nil && !errors.Is(err, net.ErrClosed) {
		return fmt.Errorf("agent %s lost: %w", in.c.addr, err)
	}
	return nil
}

// ClockOffsetNs is the agent's clock minus the coordinator's, in ns: a
// delivery's intended start is shifted by it, so that latency measured on
// the agent's clock is against the coordinator's intention.
func (in *Instance) ClockOffsetNs() int64 { return in.c.offset }

// ClockUncertaintyNs bounds ClockOffsetNs's error, in ns: half the round
// trip it was taken from.
func (in *Instance) ClockUncertaintyNs() int64 { return in.c.uncertainty }

// Lost is closed once the instance's agent is lost.
func (in *Instance) Lost() <-chan struct{} { return in.c.lost }

// Process names the instance process for people: its agent.
func (in *Instance) Process() string { return "on agent " + in.c.addr }
