package redisutil

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/lockbench/lockbench/strategies"
)

// replyError is a Redis error reply, as go-redis returns it.
type replyError string

func (e replyError) Error() string { return string(e) }
func (replyError) RedisError()     {}

var _ redis.Error = replyError("")

func TestClassify(t *testing.T) {
	done, cancel := context.WithCancel(context.Background())
	cancel()
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	timeout := &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}
	for _, c := range []struct {
		name            string
		ctx             context.Context
		err             error
		wantUnavailable bool
		wantIs          error // also required when not nil
	}{
		// Nothing to classify.
		{"nil", context.Background(), nil, false, nil},
		// A refused connection: the node is down.
		{"refused", context.Background(), refused, true, syscall.ECONNREFUSED},
		// A connection cut mid-reply: the node died.
		{"eof", context.Background(), io.EOF, true, io.EOF},
		// A socket timeout: the node is unreachable in time.
		{"timeout", context.Background(), timeout, true, os.ErrDeadlineExceeded},
		// No free pooled connection in time.
		{"pool-timeout", context.Background(), redis.ErrPoolTimeout, true, redis.ErrPoolTimeout},
		// A node still loading its data set cannot serve yet.
		{"loading", context.Background(), replyError("LOADING Redis is loading the dataset in memory"), true, nil},
		// A wrong-type reply is a bug, not an outage.
		{"wrongtype", context.Background(), replyError("WRONGTYPE Operation against a key holding the wrong kind of value"), false, nil},
		// The caller gave up: its context's error, not the server's fault.
		{"caller-cancelled", done, timeout, false, context.Canceled},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := Classify(c.ctx, "127.0.0.1:1", c.err)
			if c.err == nil {
				if got != nil {
					t.Fatalf("got %v; want nil", got)
				}
				return
			}
			if is := errors.Is(got, strategies.ErrUnavailable); is != c.wantUnavailable {
				t.Errorf("errors.Is(%v, ErrUnavailable): got %v; want %v", got, is, c.wantUnavailable)
			}
			if c.wantIs != nil && !errors.Is(got, c.wantIs) {
				t.Errorf("errors.Is(%v, %v): got false; want true", got, c.wantIs)
			}
			if !errors.Is(got, c.err) && c.ctx.Err() == nil {
				t.Errorf("got %v; want it to wrap %v", got, c.err)
			}
		})
	}
}

func TestIsTimeout(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{context.DeadlineExceeded, true},
		{&net.OpError{Op: "read", Err: os.ErrDeadlineExceeded}, true},
		{redis.ErrPoolTimeout, true},
		{io.EOF, false},
		{&net.OpError{Op: "dial", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}, false},
	} {
		if got := IsTimeout(c.err); got != c.want {
			t.Errorf("IsTimeout(%v): got %v; want %v", c.err, got, c.want)
		}
	}
}

func TestOwnerValue(t *testing.T) {
	a, b := OwnerValue("inst-1"), OwnerValue("inst-1")
	if a == b {
		t.Errorf("two owner values: got %q twice; want them different", a)
	}
	if want := "inst-1:"; a[:len(want)] != want {
		t.Errorf("owner value: got %q; want it to start with %q", a, want)
	}
}
