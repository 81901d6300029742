package pgonconflict_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/lockbench/lockbench/strategies"
	"github.com/lockbench/lockbench/strategies/pgonconflict"
)

// A payment claims the account's row, retrying with backoff while another
// instance holds it, and hands the claim's token to the store.
func ExampleNew() {
	ctx := context.Background()
	locks, err := pgonconflict.New(ctx, strategies.Config{
		PostgresDSN: "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable",
		TTL:         2 * time.Second,
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
	fmt.Println("debit account 42 with fencing token", lease.Token())
	if err := lease.Release(ctx); err != nil {
		log.Print(err) // strategies.ErrNotOwner: the claim expired meanwhile
	}
}
