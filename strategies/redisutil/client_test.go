package redisutil

import (
	"context"
	"io"
	"net"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockbench/lockbench/servers"
	"github.com/lockbench/lockbench/servers/serverstest"
)

// The pool's health check peeks at a connection only when it has been idle
// for HealthCheckIdle: a busy connection costs no system call, an idle one
// is still checked.
func TestIdleConnPeeksOnlyWhenIdle(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		_, _ = c.Write([]byte("+PONG\r\n"))
		_, _ = io.Copy(io.Discard, c)
	}()
	c, err := dialIdleChecked(context.Background(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ic, ok := c.(*idleConn)
	if !ok {
		t.Fatalf("dialIdleChecked returned %T, want *idleConn", c)
	}
	buf := make([]byte, 7)
	if _, err := io.ReadFull(ic, buf); err != nil {
		t.Fatal(err)
	}
	peeked := 0
	peek := func(uintptr) bool { peeked++; return true }
	raw, _ := ic.SyscallConn()
	// Just read: the peek is skipped. (A slow machine may take longer than
	// HealthCheckIdle to get here; then there is nothing to assert.)
	readAt := time.Now()
	if err := raw.Read(peek); err != nil {
		t.Fatal(err)
	}
	if time.Since(readAt) < HealthCheckIdle/2 && peeked != 0 {
		t.Fatalf("a connection read from just now was peeked at")
	}
	time.Sleep(2 * HealthCheckIdle)
	if err := raw.Read(peek); err != nil {
		t.Fatal(err)
	}
	if peeked != 1 {
		t.Fatalf("an idle connection was peeked at %d times, want 1", peeked)
	}
}

// A node restart closes every pooled connection; the next command must
// still find a live one (go-redis drops the dead ones on the way out of the
// pool), not fail on a stale connection.
func TestRestartedNodeIsFoundBeforeUse(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	node := serverstest.Start(t, servers.Needs{Redis: 1}, servers.Options{}).Redis[0]
	c := redis.NewClient(Options(node.Addr, ""))
	defer c.Close()
	for range 20 { // fill the pool beyond MinIdleConns
		if err := c.Ping(ctx).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := node.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := node.Start(ctx); err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		if err := c.Ping(ctx).Err(); err != nil {
			t.Fatalf("command %d after the restart: %v", i, err)
		}
	}
}
