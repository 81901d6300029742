package redisutil

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockbench/lockbench/servers/serverstest"
	"github.com/lockbench/lockbench/strategies"
)

// startNode starts one Redis node for the test and returns a client for it.
func startNode(t *testing.T) *redis.Client {
	t.Helper()
	c := redis.NewClient(Options(serverstest.Redis(t), ""))
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// TestExtendScript checks what the compare-and-extend script promises: it
// lengthens the owner's lock, never shortens it, and leaves every other
// lock alone. (The conformance suite's extend case checks a lease that
// lives on through extensions, and a stale one that is refused.)
func TestExtendScript(t *testing.T) {
	c := startNode(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		// held is the value in the lock key (none when ""), with heldTTL
		// left; Extend asks for ttl as owner "ours".
		held    string
		heldTTL time.Duration
		ttl     time.Duration
		// want is Extend's error; anyErr asks for some error instead.
		want   error
		anyErr bool
		// left is about what PTTL must report after Extend; 0 for no key.
		left time.Duration
	}{
		// Our lock with a second left, extended to ten.
		{"lengthens", "ours", time.Second, 10 * time.Second, nil, false, 10 * time.Second},
		// Our lock with ten seconds left: a 1s Extend must not shorten it.
		{"never-shortens", "ours", 10 * time.Second, time.Second, nil, false, 10 * time.Second},
		// Someone else's lock: refused, and its TTL untouched.
		{"other-owner", "theirs", time.Second, 10 * time.Second, strategies.ErrNotOwner, false, time.Second},
		// No lock at all (expired or released): refused, nothing created.
		{"gone", "", 0, 10 * time.Second, strategies.ErrNotOwner, false, 0},
		// Below PEXPIRE's resolution: an error, and the lock is not
		// deleted (PEXPIRE 0 would delete it).
		{"sub-millisecond", "ours", time.Second, time.Microsecond, nil, true, time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := "extend-script/" + tc.name
			rkey := LockKey(key)
			if tc.held != "" {
				if err := c.Set(ctx, rkey, tc.held, tc.heldTTL).Err(); err != nil {
					t.Fatal(err)
				}
			}
			err := Extend(ctx, c, key, "ours", tc.ttl)
			switch {
			case tc.anyErr && err == nil:
				t.Errorf("Extend(%v): got nil; want an error", tc.ttl)
			case !tc.anyErr && !errors.Is(err, tc.want):
				t.Errorf("Extend(%v): got %v; want %v", tc.ttl, err, tc.want)
			}
			if tc.left == 0 {
				if n := c.Exists(ctx, rkey).Val(); n != 0 {
					t.Errorf("after Extend: the key exists; want none")
				}
				return
			}
			left, err := c.PTTL(ctx, rkey).Result()
			if err != nil {
				t.Fatal(err)
			}
			if left > tc.left || left < tc.left-200*time.Millisecond {
				t.Errorf("PTTL after Extend: got %v; want about %v", left, tc.left)
			}
		})
	}
}

// TestLeaseExtendConcurrent has several goroutines extend one lease while
// others read its Deadline, under -race: readers never see the Deadline move
// back, and at the end it is no earlier than any successful Extend's start
// plus its TTL.
func TestLeaseExtendConcurrent(t *testing.T) {
	c := startNode(t)
	ctx := context.Background()
	const key, value, ttl = "extend-concurrent", "ours", 2 * time.Second
	start := time.Now()
	if err := c.Set(ctx, LockKey(key), value, ttl).Err(); err != nil {
		t.Fatal(err)
	}
	l := NewLease(c, key, value, 0, start.Add(ttl))
	const extenders, readers, rounds = 4, 4, 50
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		latest time.Time // the latest start of a successful Extend
	)
	for range extenders {
		wg.Go(func() {
			for range rounds {
				sent := time.Now()
				if err := l.Extend(ctx, ttl); err != nil {
					t.Errorf("Extend: %v", err)
					return
				}
				mu.Lock()
				if sent.After(latest) {
					latest = sent
				}
				mu.Unlock()
			}
		})
	}
	for range readers {
		wg.Go(func() {
			prev := l.Deadline()
			for range rounds {
				dl := l.Deadline()
				if dl.Before(prev) {
					t.Errorf("Deadline moved back by %v", prev.Sub(dl))
				}
				prev = dl
				time.Sleep(time.Millisecond)
			}
		})
	}
	wg.Wait()
	if dl := l.Deadline(); dl.Before(latest.Add(ttl)) {
		t.Errorf("Deadline after the extensions: %v before the latest start + TTL; want not before it", latest.Add(ttl).Sub(dl))
	}
}
