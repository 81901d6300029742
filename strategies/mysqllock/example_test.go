package mysqllock_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/lockbench/lockbench/strategies"
	"github.com/lockbench/lockbench/strategies/mysqllock"
)

// A payment takes the account's lock, waiting on the server up to 5s while
// another instance holds it. Release tells whether the session kept the
// lock to the end: ErrNotOwner means the connection died under the holder,
// and someone else may have processed the account meanwhile.
func ExampleNew() {
	ctx := context.Background()
	locks, err := mysqllock.New(ctx, strategies.Config{
		MySQLDSN: "lockbench:password@tcp(127.0.0.1:3306)/lockbench",
		Owner:    "instance-1",
	})
	if err != nil {
		log.Fatal(err)
	}
	defer locks.Close()

	actx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	lease, err := locks.Acquire(actx, "account:42") // GET_LOCK('account:42', 4.98)
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
