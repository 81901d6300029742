package etcdlock

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/connectivity"

	"github.com/lockbench/lockbench/strategies"
)

// Defaults. They are short on purpose: a lock server that does not answer
// within a couple of seconds is down as far as a payment is concerned, and the
// benchmark must report that rather than hang.
const (
	// DefaultPrefix is the etcd key prefix of every lock: "lockbench/lock/".
	// A lock's waiters create their keys under DefaultPrefix + the escaped
	// lock key + "/".
	DefaultPrefix = "lockbench/lock/"
	// DefaultDialTimeout is the etcd client's DialTimeout and the shortest
	// time a connection attempt is given: 2s.
	DefaultDialTimeout = 2 * time.Second
	// DefaultReconnectBackoff caps the wait between attempts to reconnect to
	// a member: 1s.
	DefaultReconnectBackoff = time.Second
	// DefaultOpTimeout bounds every request except the wait for the lock
	// itself (granting a lease, releasing a lock): 2s.
	DefaultOpTimeout = 2 * time.Second
	// DefaultDownAfter is how long the client may have no usable connection
	// to the cluster before a waiting Acquire gives up with
	// strategies.ErrUnavailable: 1s.
	DefaultDownAfter = time.Second
)

// maxSessionAttempts is how many sessions one Acquire tries when a session
// expires while it waits, before it reports the cluster unavailable.
const maxSessionAttempts = 3

// errSessionLost reports that the session expired during a Lock call; the
// Acquire that made the call tries again with another session.
var errSessionLost = errors.New("etcdlock: session lease expired")

// errClosed is returned by Acquire after Close.
var errClosed = errors.New("etcdlock: strategy closed")

func init() {
	strategies.Register(strategies.Info{
		Name:         "etcd",
		Order:        100,
		Color:        "#0072b2", // blue
		Description:  "etcd concurrency.Mutex on a session lease (TTL rounded up to whole seconds); fenced by the key's create revision",
		Need:         strategies.Need{Backend: strategies.BackendEtcd},
		Fencing:      true,
		CrossProcess: true,
		KeepAlive:    true,
		Lease:        LeaseTTL,
		New:          strategies.FactoryOf(New),
	})
}

// Etcd locks keys with concurrency.Mutex on the cluster at
// Config.EtcdEndpoints. It is safe for concurrent use; one Etcd is one
// instance (one etcd client, normally one session).
type Etcd struct {
	client *clientv3.Client
	// ttl is the requested session TTL in whole seconds.
	ttl    int64
	prefix string
	// Timings: DefaultOpTimeout and DefaultDownAfter.
	opTimeout time.Duration
	downAfter time.Duration

	mu sync.Mutex
	// sessions are the live sessions that take new locks, in creation
	// order. Retired and expired sessions are dropped from it; the leases
	// still using them keep a pointer.
	sessions []*session
	closed   bool
}

var (
	_ strategies.Strategy = (*Etcd)(nil)
	_ strategies.Blocker  = (*Etcd)(nil)
)

// New connects to cfg.EtcdEndpoints and creates the first session, which
// checks within DefaultOpTimeout that the cluster answers and grants leases.
// The session TTL is cfg.TTL rounded up to whole seconds, at least 1.
// https:// endpoints are reached with TLS (TLSConfig); cfg.EtcdUser and
// cfg.EtcdPassword, when set, log in to a cluster with auth enabled. A
// member whose certificate is not trusted, or a wrong user or password,
// fails New at once with an error that says so (not ErrUnavailable).
func New(ctx context.Context, cfg strategies.Config) (*Etcd, error) {
	cfg = cfg.WithDefaults()
	if len(cfg.EtcdEndpoints) == 0 {
		return nil, errors.New("etcdlock: no endpoint in Config.EtcdEndpoints")
	}
	tc, err := TLSConfig(cfg)
	if err != nil {
		return nil, err
	}
	if tc != nil {
		// gRPC reports a certificate it does not trust as a dial timeout;
		// one handshake of our own says what is wrong, at once.
		if err := checkTrust(ctx, cfg.EtcdEndpoints, tc, false); err != nil {
			return nil, err
		}
	}
	client, err := clientv3.New(clientv3.Config{
		Endpoints:   cfg.EtcdEndpoints,
		TLS:         tc,
		Username:    cfg.EtcdUser,
		Password:    cfg.EtcdPassword,
		DialTimeout: DefaultDialTimeout,
		Logger:      zap.NewNop(),
		// gRPC's reconnect backoff grows to 2 minutes; cap it so that a
		// restarted member is used again within DefaultReconnectBackoff,
		// and the benchmark measures etcd's recovery, not the client's.
		DialOptions: []grpc.DialOption{grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: DefaultReconnectBackoff},
			MinConnectTimeout: DefaultDialTimeout,
		})},
	})
	if err != nil {
		if tc != nil && ctx.Err() == nil {
			// Did a member refuse our certificate? Asked only now: the
			// answer costs a wait that a working connection need not pay.
			if terr := checkTrust(ctx, cfg.EtcdEndpoints, tc, true); terr != nil {
				return nil, terr
			}
		}
		return nil, classify(ctx, "connect", err)
	}
	e := &Etcd{
		client:    client,
		ttl:       ttlSeconds(cfg.TTL),
		prefix:    DefaultPrefix,
		opTimeout: DefaultOpTimeout,
		downAfter: DefaultDownAfter,
	}
	s, err := e.newSession(ctx)
	if err != nil {
		_ = client.Close()
		return nil, err
	}
	e.sessions = []*session{s}
	return e, nil
}

// MinServerLease is the shortest lease a locally started etcd grants: 1.5
// election timeouts (etcd's default 1s), rounded up to whole seconds. etcd
// raises a shorter request to this.
const MinServerLease = 2 * time.Second

// LeaseTTL is how long a lock outlives a holder that stops renewing it when
// ttl is configured: the session TTL, ttl rounded up to whole seconds, and
// at least MinServerLease.
func LeaseTTL(ttl time.Duration) time.Duration {
	return max(time.Duration(ttlSeconds(ttl))*time.Second, MinServerLease)
}

// ttlSeconds rounds ttl up to whole seconds, at least 1.
func ttlSeconds(ttl time.Duration) int64 {
	return max(1, int64((ttl+time.Second-1)/time.Second))
}

// Blocks reports true: Acquire waits in etcd's queue for the lock.
func (*Etcd) Blocks() bool { return true }

// Acquire waits until it holds the lock on key or ctx is done, in which case
// it returns ctx's error. It returns an error wrapping
// strategies.ErrUnavailable when the client has had no connection to the
// cluster for DefaultDownAfter, or cannot get a new session within
// DefaultOpTimeout.
func (e *Etcd) Acquire(ctx context.Context, key string) (strategies.Lease, error) {
	for attempt := 1; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		s, err := e.reserve(ctx, key)
		if err != nil {
			return nil, err
		}
		l, err := e.lock(ctx, s, key)
		if !errors.Is(err, errSessionLost) {
			return l, err
		}
		if attempt == maxSessionAttempts {
			return nil, fmt.Errorf("%w: %w (%d times while waiting for %q)", strategies.ErrUnavailable, err, attempt, key)
		}
	}
}

// lock runs one concurrency.Mutex.Lock for key on s, which must be reserved
// for key, and watches it: lock returns as soon as ctx is done, the session
// expires or the client loses its connection, even when Lock itself would
// not (with the cluster down, its requests wait for a connection, and its
// clean-up after a failed wait deletes the waiter key with the client's
// context, which has no deadline). An abandoned Lock call finishes in the
// background, and only then is (s, key) freed.
func (e *Etcd) lock(ctx context.Context, s *session, key string) (strategies.Lease, error) {
	m := concurrency.NewMutex(s.Session, e.prefix+url.PathEscape(key))
	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- m.Lock(lctx) }()
	abandon := func() {
		cancel()
		go func() { e.settle(s, key, m, <-done) }()
	}

	// The connection's state, not a request, tells a stopped cluster from a
	// slow one: a request that times out under load would make waiters give
	// up on a healthy cluster.
	tick := time.NewTicker(e.downAfter / 4)
	defer tick.Stop()
	var down time.Time // since when the client has had no connection
	for {
		select {
		case err := <-done:
			if err == nil {
				return e.newLease(s, key, m), nil
			}
			go e.settle(s, key, m, err)
			switch {
			case ctx.Err() != nil:
				return nil, ctx.Err()
			case errors.Is(err, concurrency.ErrSessionExpired) || s.expired():
				return nil, errSessionLost
			}
			return nil, classify(ctx, "lock "+key, err)
		case <-ctx.Done():
			abandon()
			return nil, ctx.Err()
		case <-s.Done():
			abandon()
			return nil, errSessionLost
		case now := <-tick.C:
			switch {
			case e.connected():
				down = time.Time{}
			case down.IsZero():
				down = now
			case now.Sub(down) >= e.downAfter:
				abandon()
				return nil, fmt.Errorf("%w: etcdlock: lock %s: no connection to %s for %v",
					strategies.ErrUnavailable, key, strings.Join(e.client.Endpoints(), ","), now.Sub(down).Round(time.Millisecond))
			}
		}
	}
}

// connected reports whether the client has a usable connection to at least
// one member of the cluster.
func (e *Etcd) connected() bool {
	return e.client.ActiveConnection().GetState() == connectivity.Ready
}

// settle frees (s, key) after a Lock call that the caller gave up on or that
// failed. A Lock that succeeded after all is unlocked. A failed Lock that
// still names its waiter key may have left it behind (its first request's
// outcome is unknown, or its own clean-up failed): s is retired, so that no
// later Lock through s can mistake that key for its own, and the key is
// deleted if the cluster answers. Otherwise the key is revoked with s's lease.
func (e *Etcd) settle(s *session, key string, m *concurrency.Mutex, err error) {
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), e.opTimeout)
		defer cancel()
		_ = e.unlock(ctx, s, key, m)
		return
	}
	if k := m.Key(); k != "" && k != lockReleasedKey {
		e.retire(s)
		ctx, cancel := context.WithTimeout(context.Background(), e.opTimeout)
		_, _ = e.client.Delete(ctx, k)
		cancel()
	}
	e.free(s, key)
}

// lockReleasedKey is what concurrency.Mutex.Key returns once the Mutex has
// deleted its key (Unlock, or TryLock finding the lock held).
const lockReleasedKey = "\x00"

// unlock deletes m's key if it is still the one m created, then frees
// (s, key). It returns strategies.ErrNotOwner when the key is gone or not
// m's. When the outcome is unknown (no answer), s is retired.
func (e *Etcd) unlock(ctx context.Context, s *session, key string, m *concurrency.Mutex) error {
	uctx, cancel := context.WithTimeout(ctx, e.opTimeout)
	resp, err := e.client.Txn(uctx).If(m.IsOwner()).Then(clientv3.OpDelete(m.Key())).Commit()
	cancel()
	if err != nil {
		e.retire(s)
		e.free(s, key)
		return classify(ctx, "release "+key, err)
	}
	e.free(s, key)
	if !resp.Succeeded {
		return strategies.ErrNotOwner
	}
	return nil
}

// Close closes the client. Its sessions' keepalives stop, so locks still held
// expire by their TTL; nothing is revoked.
func (e *Etcd) Close() error {
	e.mu.Lock()
	e.closed = true
	e.sessions = nil
	e.mu.Unlock()
	return e.client.Close()
}
