package store

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/rpc"
	"sync/atomic"
	"time"
)

// DialTimeout bounds connecting to a served store: 3 seconds.
const DialTimeout = 3 * time.Second

// CallTimeout bounds a call whose context has no deadline: 10 seconds.
const CallTimeout = 10 * time.Second

// Service exposes a Store over net/rpc: the coordinator serves it, and
// instance processes reach it over a connection as they would a real
// storage service.
type Service struct{ s Store }

// Enter is the RPC form of Store.Enter.
func (v *Service) Enter(r EnterReq, out *EnterResp) error {
	resp, err := v.s.Enter(context.Background(), r)
	*out = resp
	return err
}

// Finish is the RPC form of Store.Finish.
func (v *Service) Finish(r FinishReq, out *FinishResp) error {
	resp, err := v.s.Finish(context.Background(), r)
	*out = resp
	return err
}

// Serve serves s on ln until ln is closed.
func Serve(ln net.Listener, s Store) error {
	srv := rpc.NewServer()
	if err := srv.RegisterName("Store", &Service{s: s}); err != nil {
		return err
	}
	for {
		conn, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			return err
		}
		go srv.ServeConn(conn)
	}
}

// Client reaches a served store. It is safe for concurrent use; calls are
// multiplexed over a few connections.
type Client struct {
	conns []*rpc.Client
	next  atomic.Uint32
}

// ClientConns is the number of connections a Client opens: 4.
const ClientConns = 4

// Dial connects to a store served at addr.
func Dial(ctx context.Context, addr string) (*Client, error) {
	d := net.Dialer{Timeout: DialTimeout}
	c := &Client{}
	for range ClientConns {
		conn, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			c.Close()
			return nil, fmt.Errorf("store: dial %s: %w", addr, err)
		}
		c.conns = append(c.conns, rpc.NewClient(conn))
	}
	return c, nil
}

func (c *Client) call(ctx context.Context, method string, args, reply any) error {
	if _, ok := ctx.Deadline(); !ok {
		// Never wait forever on a coordinator that went away.
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, CallTimeout)
		defer cancel()
	}
	cl := c.conns[int(c.next.Add(1))%len(c.conns)]
	call := cl.Go(method, args, reply, make(chan *rpc.Call, 1))
	select {
	case <-call.Done:
		return call.Error
	case <-ctx.Done():
		return ctx.Err()
	}
}

var _ Accessor = (*Client)(nil)

// Enter calls Store.Enter on the served store.
func (c *Client) Enter(ctx context.Context, r EnterReq) (EnterResp, error) {
	var out EnterResp
	err := c.call(ctx, "Store.Enter", r, &out)
	return out, err
}

// Finish calls Store.Finish on the served store.
func (c *Client) Finish(ctx context.Context, r FinishReq) (FinishResp, error) {
	var out FinishResp
	err := c.call(ctx, "Store.Finish", r, &out)
	return out, err
}

// Close closes the connections.
func (c *Client) Close() error {
	var errs []error
	for _, cl := range c.conns {
		errs = append(errs, cl.Close())
	}
	return errors.Join(errs...)
}
