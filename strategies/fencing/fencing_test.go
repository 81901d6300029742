package fencing_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockbench/lockbench/servers/serverstest"
	"github.com/lockbench/lockbench/strategies"
	"github.com/lockbench/lockbench/strategies/fencing"
)

// TestLosersDoNotConsumeTokens checks the common recipe's flaw is gone: a contender
// that does not get the lock does not INCR the counter, so the next holder's
// token is the previous holder's plus one. (The conformance suite checks that
// tokens increase; this checks what they count.)
func TestLosersDoNotConsumeTokens(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	f, err := fencing.New(ctx, strategies.Config{RedisAddrs: []string{serverstest.Redis(t)}, TTL: 10 * time.Second})
	if err != nil {
		t.Fatalf("New: got %v; want a strategy", err)
	}
	defer f.Close()

	const key, losers = "tokens", 5
	a, err := f.Acquire(ctx, key)
	if err != nil {
		t.Fatalf("first Acquire: got %v; want a lease", err)
	}
	for i := range losers {
		if _, err := f.Acquire(ctx, key); !errors.Is(err, strategies.ErrNotAcquired) {
			t.Fatalf("Acquire %d while held: got %v; want ErrNotAcquired", i, err)
		}
	}
	if err := a.Release(ctx); err != nil {
		t.Fatalf("Release: got %v; want nil", err)
	}
	b, err := f.Acquire(ctx, key)
	if err != nil {
		t.Fatalf("Acquire after release: got %v; want a lease", err)
	}
	if got, want := b.Token(), a.Token()+1; got != want {
		t.Errorf("next holder's token: got %d; want %d (%d failed attempts must not consume tokens)", got, want, losers)
	}
}
