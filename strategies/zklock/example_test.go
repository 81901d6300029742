package zklock_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/lockbench/lockbench/strategies"
	zklock "github.com/lockbench/lockbench/strategies/zklock"
)

// A payment holds the account's lock while it debits, and hands the lease's
// token to the store, which refuses writes with a token older than one it
// has seen: what keeps a holder whose session expired while it was paused
// from debiting twice.
func ExampleNew() {
	ctx := context.Background()
	locks, err := zklock.New(ctx, strategies.Config{
		ZKServers: []string{"127.0.0.1:2181"},
		TTL:       2 * time.Second, // the session timeout
		Owner:     "instance-1",
	})
	if err != nil {
		log.Fatal(err)
	}
	defer locks.Close()

	// Acquire waits in the key's queue; bound the wait.
	actx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	lease, err := locks.Acquire(actx, "account:42")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("debit account 42 with fencing token", lease.Token())
	if err := lease.Release(ctx); err != nil {
		log.Print(err) // strategies.ErrNotOwner: the session expired meanwhile
	}
}
