package fencing_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/lockbench/lockbench/strategies"
	"github.com/lockbench/lockbench/strategies/fencing"
)

// The lease's token goes with every write, so the store can refuse writes
// from a holder whose lock expired while it was paused.
func Example() {
	ctx := context.Background()
	f, err := fencing.New(ctx, strategies.Config{RedisAddrs: []string{"127.0.0.1:6379"}, TTL: 2 * time.Second})
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	lease, _, err := strategies.AcquireRetry(ctx, f, "account:17", strategies.Retry{})
	if err != nil {
		log.Fatal(err)
	}
	defer lease.Release(ctx)
	// UPDATE accounts SET balance = $1, fence = $2 WHERE id = $3 AND fence < $2,
	// and check that one row was updated.
	fmt.Println("write with fencing token", lease.Token())
}
