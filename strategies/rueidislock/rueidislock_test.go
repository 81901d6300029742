package rueidislock_test

import (
	"context"
	"errors"
	"net"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockbench/lockbench/servers"
	"github.com/lockbench/lockbench/strategies"
	"github.com/lockbench/lockbench/strategies/rueidislock"
)

var node *servers.Redis

func TestMain(m *testing.M) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	cl, err := servers.Start(ctx, servers.Needs{Redis: 1}, servers.Options{})
	cancel()
	if err != nil {
		panic(err)
	}
	node = cl.Redis[0]
	code := m.Run()
	_ = cl.Stop()
	os.Exit(code)
}

func open(t *testing.T) strategies.Strategy {
	t.Helper()
	s, err := strategies.New(context.Background(), "rueidislock", strategies.Config{RedisAddrs: []string{node.Addr}})
	if err != nil {
		t.Fatalf("New: got %v; want a strategy", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func inspector(t *testing.T) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: node.Addr})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// keys are the library's three keys of lock key: KeyMajority 2 of 3.
func keys(key string) []string {
	return []string{"rueidislock:0:" + key, "rueidislock:1:" + key, "rueidislock:2:" + key}
}

// heldKeys counts the keys of key that exist.
func heldKeys(t *testing.T, c *redis.Client, key string) int {
	t.Helper()
	n, err := c.Exists(context.Background(), keys(key)...).Result()
	if err != nil {
		t.Fatal(err)
	}
	return int(n)
}

// The library's defaults as the server sees them: three keys, one value
// each (random, no token), expiring KeyValidity after the acquire, renewed
// to KeyValidity again every ExtendInterval; the lease's Deadline is the
// first validity; Release deletes the keys.
func TestDefaults(t *testing.T) {
	ctx := context.Background()
	s, c := open(t), inspector(t)
	before := time.Now()
	l, err := s.Acquire(ctx, "defaults")
	if err != nil {
		t.Fatal(err)
	}
	if dl := l.Deadline(); dl.Before(before.Add(rueidislock.KeyValidity)) || dl.After(time.Now().Add(rueidislock.KeyValidity)) {
		t.Errorf("Deadline: got %v after Acquire began; want the KeyValidity %v", dl.Sub(before), rueidislock.KeyValidity)
	}
	if l.Token() != 0 {
		t.Errorf("Token: got %d; want 0 (random values)", l.Token())
	}
	// The third key is set in the background once two are held.
	waitFor(t, time.Second, func() bool { return heldKeys(t, c, "defaults") == 3 })
	for _, k := range keys("defaults") {
		pttl := c.PTTL(ctx, k).Val()
		if pttl > rueidislock.KeyValidity || pttl < rueidislock.KeyValidity-time.Second {
			t.Errorf("PTTL %s after acquire: got %v; want about KeyValidity %v", k, pttl, rueidislock.KeyValidity)
		}
	}
	// Past the first ExtendInterval, the keys were renewed to a full validity.
	time.Sleep(rueidislock.ExtendInterval + 500*time.Millisecond)
	for _, k := range keys("defaults") {
		if pttl := c.PTTL(ctx, k).Val(); pttl < rueidislock.KeyValidity-time.Second {
			t.Errorf("PTTL %s %v after acquire: got %v; want renewed to about %v", k, time.Since(before).Round(time.Millisecond), pttl, rueidislock.KeyValidity)
		}
	}
	if err := l.Release(ctx); err != nil {
		t.Fatalf("Release: got %v; want nil", err)
	}
	if n := heldKeys(t, c, "defaults"); n != 0 {
		t.Errorf("after Release: %d keys left; want 0", n)
	}
}

// The context of Acquire bounds the wait only: cancelled after the lock was
// granted (as the harness cancels each call's context when it returns), it
// leaves the lock held, and Release reports nil.
func TestAcquireContextEndsWithCall(t *testing.T) {
	s, other, c := open(t), open(t), inspector(t)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	l, err := s.Acquire(ctx, "call-ctx")
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond) // past the call's deadline too
	if n := heldKeys(t, c, "call-ctx"); n < rueidislock.KeyMajority {
		t.Errorf("after the call's context ended: %d keys held; want at least %d", n, rueidislock.KeyMajority)
	}
	wctx, wcancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer wcancel()
	if lb, err := other.Acquire(wctx, "call-ctx"); !errors.Is(err, context.DeadlineExceeded) {
		if lb != nil {
			_ = lb.Release(context.Background())
		}
		t.Errorf("another contender while A holds: got %v; want it to wait out its context", err)
	}
	if err := l.Release(context.Background()); err != nil {
		t.Errorf("Release: got %v; want nil", err)
	}
}

// A majority of the keys deleted behind the holder's back (a restarted
// node, an administrator): the library notices through its invalidations
// and cancels the lock (Lost), Release reports ErrNotOwner, and a waiting
// contender, woken by the same invalidations, gets the lock.
func TestLostOnDeletedKeys(t *testing.T) {
	ctx := context.Background()
	a, b, c := open(t), open(t), inspector(t)
	l, err := a.Acquire(ctx, "lost")
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	var lb atomic.Pointer[strategies.Lease]
	go func() {
		wctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		x, err := b.Acquire(wctx, "lost")
		if err == nil {
			lb.Store(&x)
		}
		got <- err
	}()
	time.Sleep(100 * time.Millisecond) // B waits
	if err := c.Del(ctx, keys("lost")[:2]...).Err(); err != nil {
		t.Fatal(err)
	}
	lost := l.(interface{ Lost() <-chan struct{} }).Lost()
	select {
	case <-lost:
	case <-time.After(time.Second):
		t.Errorf("Lost: still open 1s after a majority of keys was deleted; want closed")
	}
	if err := <-got; err != nil {
		t.Fatalf("B after A's keys were deleted: got %v; want the lock", err)
	}
	if err := l.Release(ctx); !errors.Is(err, strategies.ErrNotOwner) {
		t.Errorf("A's Release after the loss: got %v; want ErrNotOwner", err)
	}
	if err := (*lb.Load()).Release(ctx); err != nil {
		t.Errorf("B's Release: got %v; want nil (A's must not have touched B's keys)", err)
	}
}

// Close does not release: the keys of a closed holder stay until their
// validity runs out, and a waiting contender gets the lock then, not
// before the holder's Deadline.
func TestCloseKeepsKeys(t *testing.T) {
	ctx := context.Background()
	a, b, c := open(t), open(t), inspector(t)
	l, err := a.Acquire(ctx, "closed")
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	closed := time.Now()
	if n := heldKeys(t, c, "closed"); n < rueidislock.KeyMajority {
		t.Errorf("after Close: %d keys held; want at least %d (Close must not release)", n, rueidislock.KeyMajority)
	}
	wctx, cancel := context.WithTimeout(ctx, rueidislock.KeyValidity+3*time.Second)
	defer cancel()
	lb, err := b.Acquire(wctx, "closed")
	if err != nil {
		t.Fatalf("B after A closed: got %v after %v; want the lock once A's keys expire", err, time.Since(closed))
	}
	if now := time.Now(); now.Before(l.Deadline()) {
		t.Errorf("B got the lock %v before A's Deadline; want not before", l.Deadline().Sub(now))
	}
	t.Logf("B got the lock %v after A closed", time.Since(closed).Round(time.Millisecond))
	_ = lb.Release(ctx)
	if err := l.Release(ctx); !errors.Is(err, strategies.ErrNotOwner) {
		t.Errorf("A's Release after Close: got %v; want ErrNotOwner", err)
	}
}

// With no server at the address New fails at once, and an Acquire waiting
// on a server that goes away fails within DownCheckEvery and a ping, both
// wrapping ErrUnavailable.
func TestServerDown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	free := ln.Addr().String()
	_ = ln.Close()
	start := time.Now()
	_, err = strategies.New(context.Background(), "rueidislock", strategies.Config{RedisAddrs: []string{free}})
	if !errors.Is(err, strategies.ErrUnavailable) || time.Since(start) > 2*time.Second {
		t.Errorf("New with nothing at %s: got %v after %v; want ErrUnavailable within 2s", free, err, time.Since(start))
	}

	a, b := open(t), open(t)
	l, err := a.Acquire(context.Background(), "down")
	if err != nil {
		t.Fatal(err)
	}
	_ = l
	got := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_, err := b.Acquire(ctx, "down")
		got <- err
	}()
	time.Sleep(100 * time.Millisecond)
	if err := node.Kill(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := node.Start(ctx); err != nil {
			t.Fatal(err)
		}
	}()
	killed := time.Now()
	select {
	case err := <-got:
		if !errors.Is(err, strategies.ErrUnavailable) {
			t.Errorf("waiting Acquire with the server killed: got %v; want ErrUnavailable", err)
		}
		t.Logf("waiting Acquire failed %v after the kill: %v", time.Since(killed).Round(time.Millisecond), err)
	case <-time.After(5 * time.Second):
		t.Fatalf("waiting Acquire with the server killed: still waiting after 5s; want ErrUnavailable")
	}
	// Release with the server down returns, by its context at the latest.
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start = time.Now()
	err = l.Release(ctx)
	if took := time.Since(start); took > time.Second {
		t.Errorf("Release with the server down: took %v; want its context's 300ms at most", took)
	}
	t.Logf("Release with the server down: %v", err)
}

// The version check's parsing: 6.2 and later pass, 6.0 and 6.1 do not.
func TestVersion(t *testing.T) {
	for _, c := range []struct {
		v    string
		okay bool
	}{
		{"7.0.15", true}, {"6.2.0", true}, {"6.2", true}, {"10.0.1", true},
		{"6.1.9", false}, {"6.0.20", false}, {"5.0.7", false},
	} {
		if got := !rueidislock.Older(c.v, rueidislock.MinVersion); got != c.okay {
			t.Errorf("version %s: got ok=%v; want %v", c.v, got, c.okay)
		}
	}
}

func waitFor(t *testing.T, limit time.Duration, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(limit); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("condition not met within %v", limit)
		}
	}
}
