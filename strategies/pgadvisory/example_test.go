package pgadvisory_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/lockbench/lockbench/strategies"
	"github.com/lockbench/lockbench/strategies/pgadvisory"
)

// A payment takes the account's advisory lock, retrying with backoff while
// another instance holds it. Release tells whether the session kept the lock
// to the end: ErrNotOwner means the connection died under the holder, and
// someone else may have processed the account meanwhile.
func ExampleNew() {
	ctx := context.Background()
	locks, err := pgadvisory.New(ctx, strategies.Config{
		PostgresDSN: "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable",
		Owner:       "instance-1",
	})
	if err != nil {
		log.Fatal(err)
	}
	defer locks.Close()

	actx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	lease, _, err := strategies.AcquireRetry(actx, locks, "account:42", strategies.Retry{})
	if errors.Is(err, strategies.ErrNotAcquired) {
		fmt.Println("another instance is processing account 42")
		return
	}
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("debit account 42")
	if err := lease.Release(ctx); errors.Is(err, strategies.ErrNotOwner) {
		log.Print("the session ended while we held the lock: ", err)
	}
}
