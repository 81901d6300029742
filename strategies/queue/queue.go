package queue

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/lockbench/lockbench/strategies"
)

// Defaults, each overridable in the NATS URL's query (see the package
// documentation).
const (
	// DefaultPartitions is how many account shards (subjects, and durable
	// consumers) the stream has: 16.
	DefaultPartitions = 16
	// MaxPartitions bounds ?partitions=: 1024.
	MaxPartitions = 1024
	// DefaultDuplicates is the stream's duplicate window: 2 minutes
	// (JetStream's own default). A payment's K deliveries arrive within
	// milliseconds of each other, far inside it.
	DefaultDuplicates = 2 * time.Minute
	// DefaultStream is the prefix of the stream's name: "LOCKBENCH".
	DefaultStream = "LOCKBENCH"
	// DefaultConnectTimeout bounds New's connection and each JetStream
	// API call made without a deadline: 2 seconds.
	DefaultConnectTimeout = 2 * time.Second
	// FetchSlice is the longest pull request a waiting Acquire or Next
	// sends: 100ms. Each request is waited out until the server answers
	// it (a message, or its expiry), never abandoned: a message the
	// server hands to an abandoned request would be in flight with
	// nobody to process it until its ack deadline. So a cancelled call
	// returns at the end of its current request, at most FetchSlice late.
	FetchSlice = 100 * time.Millisecond
)

func init() {
	strategies.Register(strategies.Info{
		Name:         "queue",
		Order:        180,
		Color:        "#999933", // olive (Tol): no lock, the broker's dedupe
		Description:  "no lock: NATS JetStream, payment id as message id (publish dedupe), one durable consumer per account shard shared by the instances (MaxAckPending 1)",
		Need:         strategies.Need{Backend: strategies.BackendNATS, Nodes: 1},
		Fencing:      true,
		CrossProcess: true,
		Redelivers:   true,
		New:          strategies.FactoryOf(New),
	})
}

// Queue is the queue strategy: one NATS connection per instance, the
// stream and the shards' consumers shared by all instances.
type Queue struct {
	nc         *nats.Conn
	js         jetstream.JetStream
	ackWait    time.Duration
	partitions int
	duplicates time.Duration
	stream     string // stream name
	prefix     string // subject prefix; a shard's subject is prefix + shard

	mu        sync.Mutex
	consumers map[int]shardConsumer // by shard; dropped on error
	streamOK  bool

	// creating serialises the creation of a shard's consumer within this
	// object (one per shard): its contenders ask the server once, not
	// each.
	creating []sync.Mutex
}

var (
	_ strategies.Strategy = (*Queue)(nil)
	_ strategies.Blocker  = (*Queue)(nil)
)

// settings are what the URL's query sets.
type settings struct {
	urls       string
	partitions int
	duplicates time.Duration
	stream     string
}

// parseURL splits lockbench's own query parameters (partitions,
// duplicates, stream) off the comma-separated NATS URLs. Errors never
// quote the URL: it may hold a password or a token.
func parseURL(raw string) (settings, error) {
	s := settings{partitions: DefaultPartitions, duplicates: DefaultDuplicates, stream: DefaultStream}
	var urls []string
	for item := range strings.SplitSeq(raw, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		if !strings.Contains(item, "://") {
			item = "nats://" + item
		}
		u, err := url.Parse(item)
		if err != nil {
			return s, errors.New("queue: Config.NATSURL is not a URL (not shown: it may hold a password or a token)")
		}
		q := u.Query()
		if v := q.Get("partitions"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > MaxPartitions {
				return s, fmt.Errorf("queue: partitions=%q: want 1..%d", v, MaxPartitions)
			}
			s.partitions = n
		}
		if v := q.Get("duplicates"); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil || d < time.Millisecond {
				return s, fmt.Errorf("queue: duplicates=%q: want a duration of 1ms or more", v)
			}
			s.duplicates = d
		}
		if v := q.Get("stream"); v != "" {
			s.stream = v
		}
		u.RawQuery = ""
		urls = append(urls, u.String())
	}
	if len(urls) == 0 {
		return s, errors.New("queue: no Config.NATSURL")
	}
	s.urls = strings.Join(urls, ",")
	return s, nil
}

// New connects to the NATS servers of cfg.NATSURL (user and password or a
// token may be in the URL) and makes sure the stream exists. The ack
// deadline is cfg.TTL. The stream's name holds it (LOCKBENCH_2000MS for
// a 2s TTL), so that strategy objects with different TTLs never share a
// consumer, whose ack deadline is one for all.
func New(ctx context.Context, cfg strategies.Config) (*Queue, error) {
	cfg = cfg.WithDefaults()
	s, err := parseURL(cfg.NATSURL)
	if err != nil {
		return nil, err
	}
	nc, err := nats.Connect(s.urls,
		nats.Name("lockbench "+cfg.Owner),
		nats.Timeout(DefaultConnectTimeout),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(50*time.Millisecond),
		// No buffering while disconnected: a publish fails at once instead
		// of being sent, late, after a reconnect.
		nats.ReconnectBufSize(-1),
		nats.RetryOnFailedConnect(false),
	)
	if err != nil {
		return nil, fmt.Errorf("queue: connect: %w: %w", strategies.ErrUnavailable, redactErr(err))
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("queue: %w", err)
	}
	ms := cfg.TTL.Milliseconds()
	q := &Queue{
		nc: nc, js: js, ackWait: cfg.TTL, partitions: s.partitions, duplicates: s.duplicates,
		stream:    fmt.Sprintf("%s_%dMS", s.stream, ms),
		prefix:    fmt.Sprintf("%s.%dms.", strings.ToLower(s.stream), ms),
		consumers: map[int]shardConsumer{},
		creating:  make([]sync.Mutex, s.partitions),
	}
	cctx, cancel := context.WithTimeout(ctx, DefaultConnectTimeout)
	defer cancel()
	if err := q.ensureStream(cctx); err != nil {
		nc.Close()
		return nil, err
	}
	return q, nil
}

// redactErr drops anything after "nats://" from a connection error: the
// URL may hold credentials.
func redactErr(err error) error {
	msg := err.Error()
	if i := strings.Index(msg, "://"); i >= 0 {
		return errors.New(msg[:i] + "://…")
	}
	return err
}

// Blocks is true: Acquire waits for the shard's turn.
func (q *Queue) Blocks() bool { return true }

// Partitions is how many shards the stream has.
func (q *Queue) Partitions() int { return q.partitions }

// Stream is the name of the stream.
func (q *Queue) Stream() string { return q.stream }

// shardOf maps a lock key to its shard: FNV-1a of the key modulo the
// partitions. Every delivery of a payment has one key (its account's, or
// its own with --lock-key payment), so all land on one shard.
func (q *Queue) shardOf(key string) int {
	h := fnv.New32a()
	h.Write([]byte(key))
	return int(h.Sum32() % uint32(q.partitions))
}

func (q *Queue) subject(shard int) string { return q.prefix + strconv.Itoa(shard) }

// ensureStream creates the stream, or updates it to this object's
// configuration, unless that was done since the last error.
func (q *Queue) ensureStream(ctx context.Context) error {
	q.mu.Lock()
	ok := q.streamOK
	q.mu.Unlock()
	if ok {
		return nil
	}
	_, err := q.js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name:        q.stream,
		Description: "lockbench payments, one subject per account shard",
		Subjects:    []string{q.prefix + "*"},
		// Work-queue semantics: a message is removed once acked, and
		// each shard has exactly one consumer (filters do not overlap).
		Retention:  jetstream.WorkQueuePolicy,
		Storage:    jetstream.FileStorage,
		Replicas:   1,
		Duplicates: q.duplicates,
	})
	if err != nil {
		return q.unavailable(ctx, "create stream", err)
	}
	q.mu.Lock()
	q.streamOK = true
	q.mu.Unlock()
	return nil
}

// publish publishes body on key's shard with message id id (none when
// empty) and reports whether the stream kept it (false: a duplicate of a
// message published within the duplicate window, dropped).
func (q *Queue) publish(ctx context.Context, key, id string, body []byte) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	if err := q.ensureStream(ctx); err != nil {
		return false, err
	}
	var opts []jetstream.PublishOpt
	if id != "" {
		opts = append(opts, jetstream.WithMsgID(id))
	}
	pctx, cancel := bound(ctx)
	defer cancel()
	ack, err := q.js.Publish(pctx, q.subject(q.shardOf(key)), body, opts...)
	if err != nil {
		return false, q.unavailable(ctx, "publish", err)
	}
	return !ack.Duplicate, nil
}

// bound gives ctx DefaultConnectTimeout when it has no deadline.
func bound(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, DefaultConnectTimeout)
}

// Acquire takes key's shard's turn as a lock: it publishes a turn message
// on the shard and waits, until ctx is done, for the shard's consumer to
// deliver the next message (its own turn, or an earlier contender's: one
// turn each). The lease holds that message unacked, which keeps every
// other message of the shard back (MaxAckPending 1) until Release acks it
// or its ack deadline (the TTL) passes and the broker redelivers it.
func (q *Queue) Acquire(ctx context.Context, key string) (strategies.Lease, error) {
	if _, err := q.publish(ctx, key, "", []byte("turn")); err != nil {
		return nil, err
	}
	return q.Next(ctx, key)
}

// Enqueue publishes one delivery of a payment on key's shard, with
// "pay-<payment>" as its message id (Nats-Msg-Id). It reports false when
// the stream dropped it as a duplicate of a delivery published within the
// duplicate window: there is then nothing more to do for it. Otherwise the
// caller takes the shard's next message with Next.
func (q *Queue) Enqueue(ctx context.Context, key string, payment int64, account int32, amount int64) (bool, error) {
	body := strconv.AppendInt(nil, payment, 10)
	body = append(body, ' ')
	body = strconv.AppendInt(body, int64(account), 10)
	body = append(body, ' ')
	body = strconv.AppendInt(body, amount, 10)
	return q.publish(ctx, key, "pay-"+strconv.FormatInt(payment, 10), body)
}

// Next waits, until ctx is done, for the next message of key's shard and
// returns the lease on it. It returns ctx's error when ctx ends first, and
// an error wrapping strategies.ErrUnavailable when the server cannot be
// reached.
func (q *Queue) Next(ctx context.Context, key string) (strategies.Lease, error) {
	return q.next(ctx, key, q.shardOf(key))
}

func (q *Queue) next(ctx context.Context, key string, shard int) (strategies.Lease, error) {
	unheard := 0 // pull requests in a row nobody listened to
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		c, err := q.consumer(ctx, shard)
		if err != nil {
			return nil, err
		}
		// One short pull request at a time (FetchSlice), waited out.
		wait := FetchSlice
		if dl, ok := ctx.Deadline(); ok {
			wait = min(wait, time.Until(dl))
		}
		if wait < time.Millisecond {
			return nil, strategies.ErrNotAcquired
		}
		start := time.Now()
		msg, err := c.Next(jetstream.FetchMaxWait(wait))
		switch {
		case err == nil:
			return q.lease(key, msg, start, c.epoch)
		case errors.Is(err, nats.ErrTimeout), errors.Is(err, jetstream.ErrNoMessages):
			// The request expired with no message: ask again, unless ctx
			// is done (the loop's first line).
		case errors.Is(err, nats.ErrNoResponders) && unheard < noResponderRetries:
			// Nobody listened: no message was handed out for it. Either
			// the consumer is gone (deleted, or a server restarted
			// without its store), or another request's create of it was
			// answered before it subscribed (nats-server registers a
			// new consumer, then subscribes; an update in between is
			// answered at once). Create it again, or bind to it, and ask
			// again after a pause.
			unheard++
			q.forgetShard(shard)
			if !strategies.Sleep(ctx, time.Duration(unheard)*noResponderPause) {
				return nil, ctx.Err()
			}
		default:
			return nil, q.unavailable(ctx, "fetch", err)
		}
	}
}

// A pull request nobody listened to is asked again noResponderRetries
// times, the nth after n*noResponderPause (300ms in all), before Next
// reports the server unavailable.
const (
	noResponderRetries = 5
	noResponderPause   = 20 * time.Millisecond
)

// forgetShard drops the shard's consumer: the next call creates it again,
// or binds to it.
func (q *Queue) forgetShard(shard int) {
	q.mu.Lock()
	delete(q.consumers, shard)
	q.mu.Unlock()
}

// lease wraps a delivered message. Its deadline counts the ack wait from
// before the pull request was sent, which is no later than the server
// started the message's ack timer.
func (q *Queue) lease(key string, msg jetstream.Msg, pulled time.Time, epoch int64) (*Lease, error) {
	meta, err := msg.Metadata()
	if err != nil {
		return nil, fmt.Errorf("queue: message without JetStream metadata: %w", err)
	}
	l := &Lease{key: key, msg: msg, token: epoch + int64(meta.Sequence.Consumer), deadline: pulled.Add(q.ackWait), delivered: meta.NumDelivered}
	l.payment, l.account, l.amount, l.carries = parseBody(msg.Data())
	return l, nil
}

// parseBody reads "payment account amount".
func parseBody(b []byte) (payment int64, account int32, amount int64, ok bool) {
	f := strings.Fields(string(b))
	if len(f) != 3 {
		return 0, 0, 0, false
	}
	p, err1 := strconv.ParseInt(f[0], 10, 64)
	a, err2 := strconv.ParseInt(f[1], 10, 32)
	x, err3 := strconv.ParseInt(f[2], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return 0, 0, 0, false
	}
	return p, int32(a), x, true
}

// Reset deletes the stream, its messages, its duplicate window and its
// consumers, and creates it again empty: what a new run needs, since its
// payment ids are the previous run's. Only one instance of a run may call
// it, before any delivery.
func (q *Queue) Reset(ctx context.Context) error {
	ctx, cancel := bound(ctx)
	defer cancel()
	q.forget()
	if err := q.js.DeleteStream(ctx, q.stream); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
		return q.unavailable(ctx, "delete stream", err)
	}
	return q.ensureStream(ctx)
}

// Close closes the connection. A lease still held is not acked: its
// message is redelivered after its ack deadline.
func (q *Queue) Close() error {
	q.nc.Close()
	return nil
}

// Leftover returns the lease on a message still waiting in one of the
// stream's shards, or nil when every shard is empty. The load generator calls it once every instance has stopped:
// a delivery that gave up waiting for its shard's next message (or a
// message handed to a pull request nobody listened to any more) leaves
// one message more in its shard than deliveries will come to take.
func (q *Queue) Leftover(ctx context.Context) (strategies.Lease, error) {
	for shard := range q.partitions {
		c, err := q.consumer(ctx, shard)
		if err != nil {
			return nil, err
		}
		info, err := c.Info(ctx)
		if err != nil {
			return nil, q.unavailable(ctx, "consumer info", err)
		}
		if info.NumPending == 0 {
			continue
		}
		// A message in flight holds the rest back until it is acked or
		// its ack deadline passes: wait for the next one until ctx ends.
		l, err := q.next(ctx, q.subject(shard), shard)
		if err != nil && ctx.Err() == nil {
			return nil, err
		}
		if err == nil {
			return l, nil
		}
	}
	return nil, nil
}
