package queue

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/lockbench/lockbench/strategies"
)

// Lease is one delivered message, held unacked.
type Lease struct {
	key       string
	msg       jetstream.Msg
	token     int64
	deadline  time.Time
	delivered uint64
	released  atomic.Bool

	payment, amount int64
	account         int32
	carries         bool
}

var _ strategies.Lease = (*Lease)(nil)

// Key is the key the lease was asked for.
func (l *Lease) Key() string { return l.key }

// Token is the consumer's delivery sequence of the message, which grows with
// every delivery, redeliveries included (the stream sequence does not). It is
// added to the consumer's creation time (milliseconds since 2020, shifted left
// by 22 bits), so a consumer created again after a restart hands out larger
// tokens, unless the old one made 4 million deliveries per millisecond.
func (l *Lease) Token() int64 { return l.token }

// Deadline is when the message's ack deadline passes, counted from before
// it was pulled.
func (l *Lease) Deadline() time.Time { return l.deadline }

// Redelivered reports whether the broker had delivered the message before
// (to a consumer that did not ack it in time).
func (l *Lease) Redelivered() bool { return l.delivered > 1 }

// Carries returns the payment the message carries, ok false for a lock
// turn (Acquire).
func (l *Lease) Carries() (payment int64, account int32, amount int64, ok bool) {
	return l.payment, l.account, l.amount, l.carries
}

// Release acks the message and waits for the server to confirm. Past the
// deadline it acks nothing and returns ErrNotOwner: the broker has given
// the message, or will, to another consumer, and an ack now would take it
// from that one (the server acks by stream sequence). A second Release
// returns ErrNotOwner too.
func (l *Lease) Release(ctx context.Context) error {
	if l.released.Swap(true) || !time.Now().Before(l.deadline) {
		return strategies.ErrNotOwner
	}
	ctx, cancel := bound(ctx)
	defer cancel()
	if err := l.msg.DoubleAck(ctx); err != nil {
		if errors.Is(err, nats.ErrTimeout) || errors.Is(err, nats.ErrConnectionClosed) ||
			errors.Is(err, nats.ErrNoResponders) || errors.Is(err, context.DeadlineExceeded) ||
			errors.Is(err, nats.ErrDisconnected) || errors.Is(err, nats.ErrConnectionReconnecting) {
			return fmt.Errorf("queue: ack: %w: %w", strategies.ErrUnavailable, err)
		}
		return fmt.Errorf("queue: ack: %w: %w", strategies.ErrNotOwner, err)
	}
	return nil
}
