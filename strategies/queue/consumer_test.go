package queue_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/lockbench/lockbench/strategies/queue"
)

// TestConsumerGone: a shard's consumer deleted behind the queue's back
// (by an operator, or a server restarted without its store) is created
// again by the next Acquire, which then gets the turn: its pull request,
// which nobody listened to, is asked again.
func TestConsumerGone(t *testing.T) {
	ep, _ := natsCluster(t)
	url := ep.NATSURL + "?stream=GONE&partitions=1"
	q := open(t, url, 5*time.Second, "A")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := q.Reset(ctx); err != nil {
		t.Fatalf("Reset: %v", err)
	}
	key := "lockbench:acct:1"
	l, err := q.Acquire(ctx, key) // creates shard-0, and q remembers it
	if err != nil {
		t.Fatalf("first Acquire: %v", err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatalf("first Release: %v", err)
	}

	nc, err := nats.Connect(ep.NATSURL)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if err := js.DeleteConsumer(ctx, q.Stream(), "shard-0"); err != nil {
		t.Fatalf("DeleteConsumer: %v", err)
	}

	l, err = q.Acquire(ctx, key)
	if err != nil {
		t.Fatalf("Acquire after the consumer was deleted: got %v; want the turn", err)
	}
	if err := l.Release(ctx); err != nil {
		t.Errorf("Release: %v", err)
	}
	if _, err := js.Consumer(ctx, q.Stream(), "shard-0"); err != nil {
		t.Errorf("consumer shard-0 after the Acquire: %v; want it created again", err)
	}
}

// TestFirstAcquiresOnNewStream: contenders take their first turn on a
// stream created a moment before, all at once, half sharing one queue
// object and half with their own, so that their creations of the shard's
// consumer race on the server. Every Acquire must get its turn.
func TestFirstAcquiresOnNewStream(t *testing.T) {
	ep, _ := natsCluster(t)
	const trials, contenders = 20, 32
	for trial := range trials {
		url := fmt.Sprintf("%s?stream=RACE%d&partitions=1", ep.NATSURL, trial)
		shared := open(t, url, 5*time.Second, "shared")
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		if err := shared.Reset(ctx); err != nil {
			cancel()
			t.Fatalf("Reset: %v", err)
		}
		objs := make([]*queue.Queue, contenders)
		for i := range objs {
			if i%2 == 0 {
				objs[i] = shared
			} else {
				objs[i] = open(t, url, 5*time.Second, fmt.Sprintf("c%d", i))
			}
		}
		var (
			wg   sync.WaitGroup
			mu   sync.Mutex
			errs []error
		)
		start := make(chan struct{})
		for i, q := range objs {
			wg.Go(func() {
				<-start
				l, err := q.Acquire(ctx, "lockbench:acct:1")
				if err == nil {
					err = l.Release(ctx)
				}
				if err != nil {
					mu.Lock()
					errs = append(errs, fmt.Errorf("trial %d contender %d: %w", trial, i, err))
					mu.Unlock()
				}
			})
		}
		close(start)
		wg.Wait()
		cancel()
		for _, err := range errs {
			t.Error(err)
		}
	}
}
