package zklock

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/lockbench/lockbench/strategies"
)

// Defaults. As for etcd they are short on purpose: a lock server that does
// not answer within a couple of seconds is down as far as a payment is
// concerned, and the benchmark must report that rather than hang.
const (
	// DefaultRoot is the znode under which every lock key has its parent:
	// "/lockbench/locks". A lock's waiters create their znodes under
	// DefaultRoot + "/" + the escaped lock key.
	DefaultRoot = "/lockbench/locks"
	// DefaultConnectTimeout is how long New waits for a session: 2s.
	DefaultConnectTimeout = 2 * time.Second
	// DefaultOpTimeout bounds every request except the wait for the lock
	// itself (creating the znode, listing the queue, releasing): 2s.
	DefaultOpTimeout = 2 * time.Second
	// DefaultDownAfter is how long the client may be without a session
	// (disconnected, or connected and not yet answered) before requests,
	// which wait for it meanwhile, fail and a waiting Acquire gives up with
	// strategies.ErrUnavailable: 4s. The session outlives the connection
	// (and a restarted server restores it), so a short outage costs a
	// delay, not an error; a server that is down is reported within
	// seconds all the same.
	DefaultDownAfter = 4 * time.Second
)

// The server's timings this package assumes: those of a ZooKeeper that
// package servers starts. A server of your own with ZooKeeper's default
// tickTime of 2s raises every session timeout below 4s to 4s and caps it
// at 40s; Lease.Deadline follows the timeout the server actually granted,
// but LeaseTTL (what the fault schedule waits for) does not know it.
const (
	// TickTime is the server's tickTime: 100ms. Sessions expire on a tick,
	// so a lock outlives its holder's session timeout by up to one tick.
	TickTime = 100 * time.Millisecond
	// MinSessionTimeout is the shortest session the server grants, 2 ×
	// TickTime: a shorter TTL is raised to it.
	MinSessionTimeout = 2 * TickTime
	// MaxSessionTimeout is the longest session the server grants: 10
	// minutes. A longer TTL is cut to it.
	MaxSessionTimeout = 10 * time.Minute
)

// downPoll is how often a waiter checks whether the client has a session.
const downPoll = 100 * time.Millisecond

// maxSessionAttempts is how many znodes one Acquire creates when its
// session expires while it waits, before it reports the ensemble
// unavailable.
const maxSessionAttempts = 3

var (
	// errSessionLost reports that the waiter's znode vanished while it
	// waited (its session expired); Acquire tries again with a new znode.
	errSessionLost = errors.New("zklock: session expired while waiting (the waiter's znode is gone)")
	// errClosed is returned by Acquire after Close.
	errClosed = errors.New("zklock: strategy closed")
)

func init() {
	strategies.Register(strategies.Info{
		Name:         "zookeeper",
		Order:        110,
		Color:        "#117733", // green (Tol)
		Description:  "ZooKeeper lock recipe (ephemeral sequential znodes) on a session whose timeout is the TTL; fenced by the znode's sequence number",
		Need:         strategies.Need{Backend: strategies.BackendZooKeeper},
		Fencing:      true,
		CrossProcess: true,
		// The client's pings keep the session alive while the process
		// runs, whatever the work does.
		KeepAlive: true,
		Lease:     LeaseTTL,
		New:       strategies.FactoryOf(New),
	})
}

// ZooKeeper locks keys with ZooKeeper's lock recipe on the ensemble at
// Config.ZKServers. It is safe for concurrent use; one ZooKeeper is one
// instance: one client, one session at a time, shared by all its locks.
type ZooKeeper struct {
	conn    *zk.Conn
	hosts   hosts
	servers []string
	root    string
	owner   []byte // the znodes' data: Config.Owner
	// ttl is the session timeout asked for (Config.TTL).
	ttl time.Duration
	// Timings: DefaultOpTimeout and DefaultDownAfter.
	opTimeout time.Duration
	downAfter time.Duration

	// sock is the client's current connection; once closing is set no new
	// one is made. See Close.
	sockMu  sync.Mutex
	sock    net.Conn
	closing bool

	// down is when the client last lost its session (Unix nanoseconds), 0
	// while it has one. Written by the client's event callback.
	down atomic.Int64

	sessMu sync.Mutex
	sess   *session // the current session's record
	hello  hello    // what the last connect response said

	closed    chan struct{}
	closeOnce sync.Once
}

var (
	_ strategies.Strategy = (*ZooKeeper)(nil)
	_ strategies.Blocker  = (*ZooKeeper)(nil)
)

// New connects to cfg.ZKServers and waits up to DefaultConnectTimeout (and
// until ctx is done) for a session. The session timeout asked for is
// cfg.TTL; the server raises or cuts it to its own bounds.
func New(ctx context.Context, cfg strategies.Config) (*ZooKeeper, error) {
	cfg = cfg.WithDefaults()
	if len(cfg.ZKServers) == 0 {
		return nil, errors.New("zklock: no server in Config.ZKServers")
	}
	z := &ZooKeeper{
		servers:   cfg.ZKServers,
		root:      DefaultRoot,
		owner:     []byte(cfg.Owner),
		ttl:       cfg.TTL,
		opTimeout: DefaultOpTimeout,
		downAfter: DefaultDownAfter,
		closed:    make(chan struct{}),
	}
	z.down.Store(time.Now().UnixNano())
	conn, _, err := zk.Connect(cfg.ZKServers, cfg.TTL,
		zk.WithDialer(z.dial),
		zk.WithHostProvider(&z.hosts),
		zk.WithEventCallback(z.onEvent),
		zk.WithLogger(quiet{}),
		zk.WithLogInfo(false),
	)
	if err != nil {
		return nil, fmt.Errorf("zklock: %w", err)
	}
	z.conn = conn
	if err := z.firstSession(ctx, DefaultConnectTimeout); err != nil {
		_ = z.Close()
		return nil, err
	}
	go z.keepalive()
	return z, nil
}

// firstSession waits until the client has a session, for at most limit.
func (z *ZooKeeper) firstSession(ctx context.Context, limit time.Duration) error {
	wctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for z.conn.State() != zk.StateHasSession {
		select {
		case <-wctx.Done():
			return classify(ctx, "connect", fmt.Errorf("no session with %v after %v", z.servers, limit))
		case <-tick.C:
		}
	}
	return nil
}

// SessionTimeout is the session timeout a server with this package's
// assumed timings grants for ttl: ttl in whole milliseconds (what the
// protocol carries), at least MinSessionTimeout and at most
// MaxSessionTimeout.
func SessionTimeout(ttl time.Duration) time.Duration {
	return min(max(ttl.Truncate(time.Millisecond), MinSessionTimeout), MaxSessionTimeout)
}

// LeaseTTL is how long a lock outlives a holder that stops renewing it when
// ttl is configured: the granted session timeout plus one tick, since the
// server expires sessions on its ticks.
func LeaseTTL(ttl time.Duration) time.Duration {
	return SessionTimeout(ttl) + TickTime
}

// Blocks reports true: Acquire waits in the key's queue for the lock.
func (*ZooKeeper) Blocks() bool { return true }

// Acquire waits until it holds the lock on key or ctx is done, in which case
// it returns ctx's error (and deletes its znode in the background). It
// returns an error wrapping strategies.ErrUnavailable when the client has
// had no session for DefaultDownAfter, or a request got no answer within
// DefaultOpTimeout.
func (z *ZooKeeper) Acquire(ctx context.Context, key string) (strategies.Lease, error) {
	parent := z.root + "/" + escapeKey(key)
	for attempt := 1; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		select {
		case <-z.closed:
			return nil, errClosed
		default:
		}
		l, err := z.lock(ctx, key, parent)
		if !errors.Is(err, errSessionLost) {
			return l, err
		}
		if attempt == maxSessionAttempts {
			return nil, fmt.Errorf("%w: %w (%d times while waiting for %q)", strategies.ErrUnavailable, err, attempt, key)
		}
	}
}

// lock is the recipe: create an ephemeral sequential znode under the key's
// parent, list the parent's children, and hold the lock when ours has the
// lowest sequence number; otherwise wait for the deletion of the znode just
// before ours (only that one: a release wakes one waiter, not the herd) and
// list again, since the predecessor may have been a waiter that gave up
// rather than the holder. Every failure after the create deletes our znode,
// in the background, so it blocks nobody.
func (z *ZooKeeper) lock(ctx context.Context, key, parent string) (strategies.Lease, error) {
	n, err := z.create(ctx, parent)
	if err != nil {
		return nil, err
	}
	waited := false
	for {
		var children []string
		_, err := z.read(ctx, func() (err error) {
			children, _, err = z.conn.Children(parent)
			return err
		})
		if err != nil {
			go z.forget(n.path)
			return nil, classify(ctx, "list "+parent, err)
		}
		pred, mine := predecessor(children, n.name, n.seq)
		switch {
		case !mine:
			return nil, errSessionLost
		case pred == "":
			l := z.newLease(key, n)
			l.waited = waited
			return l, nil
		}
		waited = true
		var events <-chan zk.Event
		_, err = z.read(ctx, func() (err error) {
			// A data watch, not an exists watch: on a znode that is already
			// gone, ExistsW leaves a watch for its creation behind, which
			// never fires (names are unique) and piles up in client and
			// server; GetW sets no watch then (Curator does the same).
			_, _, events, err = z.conn.GetW(parent + "/" + pred)
			return err
		})
		switch {
		case errors.Is(err, zk.ErrNoNode):
			continue // gone already: list again
		case err != nil:
			go z.forget(n.path)
			return nil, classify(ctx, "watch "+pred, err)
		}
		if err := z.wait(ctx, events); err != nil {
			go z.forget(n.path)
			return nil, err
		}
	}
}

// wait returns once events fires (then the caller lists the queue again),
// ctx is done, the client has had no session for downAfter, or z is closed.
// A session that expires meanwhile also fires events (not watching): the
// next listing then misses our znode.
func (z *ZooKeeper) wait(ctx context.Context, events <-chan zk.Event) error {
	tick := time.NewTicker(downPoll)
	defer tick.Stop()
	for {
		select {
		case ev := <-events:
			if errors.Is(ev.Err, zk.ErrClosing) {
				return errClosed
			}
			return nil
		case <-ctx.Done():
			return ctx.Err()
		case <-z.closed:
			return errClosed
		case <-tick.C:
			if d := z.downFor(); d >= z.downAfter {
				return fmt.Errorf("%w: zklock: no session with %v for %v", strategies.ErrUnavailable, z.servers, d.Round(time.Millisecond))
			}
		}
	}
}

// Close closes the client without ending its session: locks still held
// expire with the session, by its timeout, and are not released. (zk.Conn's
// own Close sends closeSession, which deletes every ephemeral znode of the
// session at once, releasing them.) So the connection is cut first, no new
// one is made, and the client then gives up on the close request it has no
// connection to send on. Close does not wait for that.
func (z *ZooKeeper) Close() error {
	z.closeOnce.Do(func() {
		close(z.closed)
		z.sockMu.Lock()
		z.closing = true
		if z.sock != nil {
			_ = z.sock.Close()
		}
		z.sockMu.Unlock()
		if z.conn != nil {
			go z.conn.Close()
		}
	})
	return nil
}
