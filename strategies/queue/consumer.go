package queue

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/lockbench/lockbench/strategies"
)

// shardConsumer is a shard's consumer and the epoch of its tokens.
type shardConsumer struct {
	jetstream.Consumer
	// epoch is the consumer's creation time, in milliseconds since
	// tokenEpoch, shifted left by seqBits: the high part of its tokens.
	epoch int64
}

// Tokens are epoch + delivery sequence (see Lease.Token).
const seqBits = 22

// tokenEpoch is the zero of a token's epoch: 2020-01-01 UTC. 41 bits of
// milliseconds since then last until 2089.
var tokenEpoch = time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)

// consumer returns the shard's durable pull consumer, creating it (or
// binding to it: every instance asks for the same one) on first use.
func (q *Queue) consumer(ctx context.Context, shard int) (shardConsumer, error) {
	if c, ok := q.cached(shard); ok {
		return c, nil
	}
	q.creating[shard].Lock()
	defer q.creating[shard].Unlock()
	c, ok := q.cached(shard)
	if ok {
		return c, nil
	}
	if err := q.ensureStream(ctx); err != nil {
		return c, err
	}
	name := "shard-" + strconv.Itoa(shard)
	jc, err := q.js.CreateOrUpdateConsumer(ctx, q.stream, jetstream.ConsumerConfig{
		Durable:       name,
		FilterSubject: q.subject(shard),
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       q.ackWait,
		// One message of the shard in flight: the shard's payments are
		// processed one at a time, whichever instance takes them.
		MaxAckPending: 1,
		MaxDeliver:    -1,
		MaxWaiting:    4096,
		DeliverPolicy: jetstream.DeliverAllPolicy,
	})
	if err != nil {
		return c, q.unavailable(ctx, "create consumer", err)
	}
	c = shardConsumer{Consumer: jc, epoch: max(0, jc.CachedInfo().Created.Sub(tokenEpoch).Milliseconds()) << seqBits}
	q.mu.Lock()
	q.consumers[shard] = c
	q.mu.Unlock()
	return c, nil
}

// cached returns the shard's consumer if this object has it.
func (q *Queue) cached(shard int) (shardConsumer, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	c, ok := q.consumers[shard]
	return c, ok
}

// forget drops what this object knows of the stream and its consumers
// after an error: a server restarted without its store has neither, and
// the next call creates them again.
func (q *Queue) forget() {
	q.mu.Lock()
	q.streamOK = false
	clear(q.consumers)
	q.mu.Unlock()
}

// unavailable wraps err, a call's failure: the caller's ctx ending is its
// own doing; anything else, the server refusing or not answering within
// the call's own bound (a publish to a server just killed waits for an
// ack that never comes, on a connection that has not noticed yet), wraps
// strategies.ErrUnavailable. Errors that say the stream or a consumer is
// gone make the next call create them again.
func (q *Queue) unavailable(ctx context.Context, what string, err error) error {
	q.forget()
	if ctx.Err() != nil {
		return fmt.Errorf("queue: %s: %w", what, err)
	}
	return fmt.Errorf("queue: %s: %w: %w", what, strategies.ErrUnavailable, err)
}
