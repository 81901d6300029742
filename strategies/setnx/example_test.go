package setnx_test

import (
	"context"
	"log"
	"time"

	"github.com/lockbench/lockbench/strategies"
	"github.com/lockbench/lockbench/strategies/setnx"
)

// A payment handler takes the lock on its account, retrying with jittered
// backoff for up to 5s, does its work well before the lease's deadline, and
// releases the lock.
func Example() {
	ctx := context.Background()
	s, err := setnx.New(ctx, strategies.Config{
		RedisAddrs: []string{"127.0.0.1:6379"},
		TTL:        2 * time.Second,
		Owner:      "instance-1",
	})
	if err != nil {
		log.Fatal(err) // wraps strategies.ErrUnavailable when Redis is down
	}
	defer s.Close()

	actx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	lease, _, err := strategies.AcquireRetry(actx, s, "account:17", strategies.Retry{})
	if err != nil {
		log.Fatal(err) // strategies.ErrNotAcquired: someone else held it for 5s
	}
	// ... read the balance, debit, mark the payment processed ...
	if err := lease.Release(ctx); err != nil {
		log.Print(err) // strategies.ErrNotOwner: the lock expired while we worked
	}
}
