package zklock

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/lockbench/lockbench/servers"
	"github.com/lockbench/lockbench/strategies"
)

// zkServers are the addresses of the ZooKeeper ensemble the tests share:
// the one named by LOCKBENCH_ZK_SERVERS, or one TestMain starts.
var zkServers []string

func TestMain(m *testing.M) { os.Exit(runTests(m)) }

func runTests(m *testing.M) int {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	ep, cluster, err := servers.Ensure(ctx, servers.Needs{ZooKeeper: true}, servers.EndpointsFromEnv(), servers.Options{})
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "zklock: start ZooKeeper:", err)
		return 1
	}
	defer cluster.Stop()
	zkServers = ep.ZKServers
	return m.Run()
}

// newZK returns a strategy on addrs (the shared ensemble when nil), closed
// when t ends.
func newZK(t *testing.T, ttl time.Duration, addrs []string) *ZooKeeper {
	t.Helper()
	if addrs == nil {
		addrs = zkServers
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	z, err := New(ctx, strategies.Config{ZKServers: addrs, TTL: ttl, Owner: t.Name()})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { _ = z.Close() })
	return z
}

// testKey returns a lock key no other test uses, even across runs against
// one ensemble.
func testKey(t *testing.T) string {
	return fmt.Sprintf("%s-%d", t.Name(), time.Now().UnixNano())
}

func acquire(t *testing.T, z *ZooKeeper, key string) strategies.Lease {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l, err := z.Acquire(ctx, key)
	if err != nil {
		t.Fatalf("Acquire(%q): %v", key, err)
	}
	return l
}

// children lists the lock znodes of key, through a plain client.
func children(t *testing.T, key string) []string {
	t.Helper()
	zc, _, err := zk.Connect(zkServers, 5*time.Second, zk.WithLogger(quiet{}), zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer zc.Close()
	names, _, err := zc.Children(DefaultRoot + "/" + escapeKey(key))
	if err != nil {
		t.Fatalf("Children: %v", err)
	}
	return names
}

func TestSessionTimeout(t *testing.T) {
	for _, tc := range []struct {
		ttl, want time.Duration
	}{
		{0, MinSessionTimeout},                                                  // no TTL: the server's minimum
		{50 * time.Millisecond, MinSessionTimeout},                              // below 2 ticks is raised
		{500 * time.Millisecond, 500 * time.Millisecond},                        // the suite's short TTL, as is
		{2 * time.Second, 2 * time.Second},                                      // the default, as is
		{1500*time.Millisecond + 999*time.Microsecond, 1500 * time.Millisecond}, // whole ms on the wire
		{time.Hour, MaxSessionTimeout},                                          // cut to the maximum
		{-time.Second, MinSessionTimeout},                                       // nonsense still yields a valid timeout
	} {
		if got := SessionTimeout(tc.ttl); got != tc.want {
			t.Errorf("SessionTimeout(%v) = %v; want %v", tc.ttl, got, tc.want)
		}
		if got := LeaseTTL(tc.ttl); got != tc.want+TickTime {
			t.Errorf("LeaseTTL(%v) = %v; want %v (one tick more)", tc.ttl, got, tc.want+TickTime)
		}
	}
}

// TestServersTimings checks that the timings this package assumes are the
// ones package servers configures.
func TestServersTimings(t *testing.T) {
	if TickTime != servers.ZKTickTime || MinSessionTimeout != servers.ZKMinSessionTimeout || MaxSessionTimeout != servers.ZKMaxSessionTimeout {
		t.Errorf("assumed tick %v, sessions %v..%v; servers configures %v, %v..%v",
			TickTime, MinSessionTimeout, MaxSessionTimeout, servers.ZKTickTime, servers.ZKMinSessionTimeout, servers.ZKMaxSessionTimeout)
	}
}

func TestNames(t *testing.T) {
	for _, tc := range []struct{ key, want string }{
		{"account:42", "account:42"},               // as is
		{"conformance/x/T", "conformance%2Fx%2FT"}, // a slash would be a path
		{"", "%"},    // ZooKeeper refuses an empty name
		{".", "%2E"}, // and . and ..
		{"..", "%2E%2E"},
		{"...", "..."},  // but not longer runs of dots
		{"é", "%C3%A9"}, // non-ASCII is escaped
	} {
		if got := escapeKey(tc.key); got != tc.want {
			t.Errorf("escapeKey(%q) = %q; want %q", tc.key, got, tc.want)
		}
	}
	for _, tc := range []struct {
		name string
		seq  int64
		ok   bool
	}{
		{"lock-0123456789abcdef0123456789abcdef-0000000042", 42, true},
		{"lock-x-0000000000", 0, true},
		{"other-0000000001", 0, false}, // not a lock znode
		{"lock-x-", 0, false},          // no number
	} {
		if seq, ok := seqOf(tc.name); seq != tc.seq || ok != tc.ok {
			t.Errorf("seqOf(%q) = %d, %v; want %d, %v", tc.name, seq, ok, tc.seq, tc.ok)
		}
	}
	queue := []string{"lock-c-0000000007", "lock-a-0000000003", "other", "lock-b-0000000005"}
	for _, tc := range []struct {
		name string
		seq  int64
		pred string
		mine bool
	}{
		{"lock-a-0000000003", 3, "", true},                   // lowest: holds the lock
		{"lock-b-0000000005", 5, "lock-a-0000000003", true},  // waits for the one just below
		{"lock-c-0000000007", 7, "lock-b-0000000005", true},  // not for the holder
		{"lock-d-0000000009", 9, "lock-c-0000000007", false}, // gone: its session expired
	} {
		if pred, mine := predecessor(queue, tc.name, tc.seq); pred != tc.pred || mine != tc.mine {
			t.Errorf("predecessor(%s) = %q, %v; want %q, %v", tc.name, pred, mine, tc.pred, tc.mine)
		}
	}
}

func TestAcquireRelease(t *testing.T) {
	z := newZK(t, 0, nil)
	key := testKey(t)
	l := acquire(t, z, key)
	after := time.Now()
	if got := l.Key(); got != key {
		t.Errorf("Key() = %q; want %q", got, key)
	}
	if got := l.Token(); got != 1 {
		t.Errorf("Token() of the key's first holder = %d; want 1 (sequence 0, plus one)", got)
	}
	// The default TTL, 2s, is granted as is; the session was renewed at
	// most that long before Acquire returned.
	if got := l.Deadline(); !got.After(after) || got.After(after.Add(strategies.DefaultTTL)) {
		t.Errorf("Deadline() = %v after Acquire returned; want in (0, %v]", got.Sub(after), strategies.DefaultTTL)
	}
	if names := children(t, key); len(names) != 1 || !strings.HasPrefix(names[0], lockPrefix) {
		t.Errorf("znodes under the key = %q; want one lock znode", names)
	}
	ctx := context.Background()
	if err := l.Release(ctx); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if err := l.Release(ctx); !errors.Is(err, strategies.ErrNotOwner) {
		t.Errorf("second Release: got %v; want ErrNotOwner", err)
	}
	if names := children(t, key); len(names) != 0 {
		t.Errorf("znodes under the key after Release = %q; want none", names)
	}
	l2 := acquire(t, z, key)
	if l2.Token() <= l.Token() {
		t.Errorf("next holder's token %d; want > %d", l2.Token(), l.Token())
	}
	if err := l2.Release(ctx); err != nil {
		t.Errorf("Release: %v", err)
	}
}

// TestGrantedTimeout checks that the session record holds the timeout the
// server granted, read from its connect response, not the one asked for.
func TestGrantedTimeout(t *testing.T) {
	for _, tc := range []struct{ ttl, want time.Duration }{
		{50 * time.Millisecond, MinSessionTimeout}, // raised by the server
		{1500 * time.Millisecond, 1500 * time.Millisecond},
	} {
		z := newZK(t, tc.ttl, nil)
		l := acquire(t, z, testKey(t))
		if got := l.(*lease).n.s.timeout; got != tc.want {
			t.Errorf("TTL %v: granted %v; want %v", tc.ttl, got, tc.want)
		}
		_ = l.Release(context.Background())
	}
}

// TestCancelledWaiter checks that a waiter that gives up deletes its znode
// at once, so that the next waiter is not stuck behind it.
func TestCancelledWaiter(t *testing.T) {
	z1, z2, z3 := newZK(t, 0, nil), newZK(t, 0, nil), newZK(t, 0, nil)
	key := testKey(t)
	held := acquire(t, z1, key)

	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan error, 1)
	go func() {
		_, err := z2.Acquire(ctx, key)
		got <- err
	}()
	time.Sleep(200 * time.Millisecond)
	start := time.Now()
	cancel()
	select {
	case err := <-got:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled Acquire: got %v; want context.Canceled", err)
		}
		t.Logf("cancelled Acquire returned in %v", time.Since(start))
	case <-time.After(time.Second):
		t.Fatal("cancelled Acquire still waiting after 1s")
	}
	deadline := time.Now().Add(2 * time.Second)
	for len(children(t, key)) != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("znodes under the key 2s after the waiter gave up: %q; want only the holder's", children(t, key))
		}
		time.Sleep(20 * time.Millisecond)
	}

	third := make(chan strategies.Lease, 1)
	go func() {
		l, err := z3.Acquire(context.Background(), key)
		if err != nil {
			t.Errorf("third contender: %v", err)
		}
		third <- l
	}()
	time.Sleep(100 * time.Millisecond)
	if err := held.Release(context.Background()); err != nil {
		t.Fatalf("Release: %v", err)
	}
	select {
	case l := <-third:
		if l != nil {
			_ = l.Release(context.Background())
		}
	case <-time.After(3 * time.Second):
		t.Fatal("third contender still waiting 3s after the holder released")
	}
}

// TestSessionExpired plays a process cut off for longer than its session
// timeout (a pause, a partition): the server expires the session, another
// instance takes the lock with a larger token, and once the cut-off client
// is back it has a new session, its stale Release reports ErrNotOwner, and
// it takes locks again.
func TestSessionExpired(t *testing.T) {
	p := newProxy(t, zkServers[0])
	cutOff, other := newZK(t, 500*time.Millisecond, []string{p.addr()}), newZK(t, 0, nil)
	key := testKey(t)
	stale := acquire(t, cutOff, key)
	old := cutOff.conn.SessionID()

	p.cut(true)
	start := time.Now()
	next := acquire(t, other, key)
	t.Logf("lock passed on %v after the cut", time.Since(start).Round(time.Millisecond))
	if now, dl := time.Now(), stale.Deadline(); now.Before(dl) {
		t.Errorf("lock passed on %v before the stale holder's Deadline; want not before it", dl.Sub(now))
	}
	if next.Token() <= stale.Token() {
		t.Errorf("next holder's token %d; want > stale holder's %d", next.Token(), stale.Token())
	}

	p.cut(false)
	deadline := time.Now().Add(10 * time.Second)
	for cutOff.conn.State() != zk.StateHasSession || cutOff.conn.SessionID() == old {
		if time.Now().After(deadline) {
			t.Fatalf("no new session 10s after the cut ended (state %v)", cutOff.conn.State())
		}
		time.Sleep(20 * time.Millisecond)
	}
	ctx := context.Background()
	if err := stale.Release(ctx); !errors.Is(err, strategies.ErrNotOwner) {
		t.Errorf("stale holder's Release: got %v; want ErrNotOwner", err)
	}
	if err := next.Release(ctx); err != nil {
		t.Errorf("Release: %v", err)
	}
	l := acquire(t, cutOff, key)
	if l.Token() <= next.Token() {
		t.Errorf("token %d after recovery; want > %d", l.Token(), next.Token())
	}
	_ = l.Release(ctx)
}

// TestWaiterSessionExpires checks that a waiter whose session expires
// (here, cut off for longer than its timeout but shorter than
// DefaultDownAfter) keeps waiting with a new znode instead of failing or
// hanging.
func TestWaiterSessionExpires(t *testing.T) {
	p := newProxy(t, zkServers[0])
	holder, waiter := newZK(t, 0, nil), newZK(t, MinSessionTimeout, []string{p.addr()})
	key := testKey(t)
	held := acquire(t, holder, key)
	old := waiter.conn.SessionID()

	got := make(chan error, 1)
	go func() {
		l, err := waiter.Acquire(context.Background(), key)
		if err == nil {
			if l.(*lease).n.s.id == old {
				err = errors.New("lock granted in the expired session")
			}
			_ = l.Release(context.Background())
		}
		got <- err
	}()
	time.Sleep(200 * time.Millisecond)
	p.cut(true)
	time.Sleep(600 * time.Millisecond) // 3 session timeouts; with the redial, under DefaultDownAfter
	p.cut(false)
	// The new session comes once the client has redialled: within
	// seconds, however busy the machine.
	for end := time.Now().Add(10 * time.Second); waiter.conn.SessionID() == old && time.Now().Before(end); {
		time.Sleep(20 * time.Millisecond)
	}
	if waiter.conn.SessionID() == old {
		t.Fatalf("the waiter's session did not expire within 10 s; the test staged nothing")
	}
	time.Sleep(200 * time.Millisecond) // the waiter's new znode, behind the holder's
	select {
	case err := <-got:
		t.Fatalf("waiter returned while the lock was held: %v", err)
	default:
	}
	if err := held.Release(context.Background()); err != nil {
		t.Fatalf("Release: %v", err)
	}
	select {
	case err := <-got:
		if err != nil {
			t.Errorf("waiter: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("waiter still waiting 5s after the holder released")
	}
}

// TestServerDown stops the server under a held lock and a waiter and checks
// that every call returns an error wrapping ErrUnavailable within 5s, then
// that the strategy recovers when the server is back, and that the lock the
// failed Release left is gone.
func TestServerDown(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cluster, err := servers.Start(ctx, servers.Needs{ZooKeeper: true}, servers.Options{})
	if err != nil {
		t.Fatalf("start ZooKeeper: %v", err)
	}
	defer cluster.Stop()
	addrs := cluster.Endpoints().ZKServers
	holder, waiter := newZK(t, 0, addrs), newZK(t, 0, addrs)
	key := testKey(t)
	held := acquire(t, holder, key)
	waited := make(chan error, 1)
	go func() {
		_, err := waiter.Acquire(context.Background(), key)
		waited <- err
	}()
	time.Sleep(200 * time.Millisecond)

	if err := cluster.ZooKeeper[0].Kill(); err != nil {
		t.Fatalf("Kill: %v", err)
	}
	stopped := time.Now()
	const bound = 5 * time.Second
	check := func(what string, err error, start time.Time) {
		t.Helper()
		took := time.Since(start)
		t.Logf("%s: %v after %v", what, err, took.Round(time.Millisecond))
		if !errors.Is(err, strategies.ErrUnavailable) {
			t.Errorf("%s with ZooKeeper stopped: got %v; want ErrUnavailable", what, err)
		}
		if took > bound {
			t.Errorf("%s with ZooKeeper stopped took %v; want < %v", what, took, bound)
		}
	}
	select {
	case err := <-waited:
		check("waiting Acquire", err, stopped)
	case <-time.After(2 * bound):
		t.Fatal("waiting Acquire still waiting 10s after ZooKeeper stopped")
	}
	start := time.Now()
	_, err = holder.Acquire(context.Background(), key+"-new")
	check("Acquire", err, start)
	start = time.Now()
	check("Release", held.Release(context.Background()), start)
	start = time.Now()
	_, err = New(context.Background(), strategies.Config{ZKServers: addrs})
	check("New", err, start)

	if err := cluster.ZooKeeper[0].Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	// A dial, refused or cut off by the handshake bound, then the client's
	// wait of a second after a round of servers with no session, twice,
	// and time for a loaded machine.
	began, limit := time.Now(), 2*(waiter.handshake()+time.Second)+3*time.Second
	for waiter.conn.State() != zk.StateHasSession {
		if time.Since(began) > limit {
			t.Fatalf("no session %v after the restart (state %v)", limit, waiter.conn.State())
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("session back %v after the restart", time.Since(began).Round(time.Millisecond))
	// The holder's session survived the restart (ZooKeeper keeps sessions
	// in its log), so its znode did too, until the Release that failed
	// deleted it in the background.
	l := acquire(t, waiter, key)
	if err := l.Release(ctx); err != nil {
		t.Errorf("Release after restart: %v", err)
	}
}

// TestSilentServer puts the client's server behind a proxy that accepts
// connections and never answers: the client must drop each one after its
// handshake bound and dial again (zk.Conn alone would wait 13s on the
// first), and have a session soon after the server answers again.
func TestSilentServer(t *testing.T) {
	p := newProxy(t, zkServers[0])
	z := newZK(t, 0, []string{p.addr()})
	bound := z.handshake()
	p.mute(true)
	before := p.accepts()
	// After the cut: a dial, its bound, a second dial, its bound, and
	// the client's second's wait after a round with no session.
	time.Sleep(2*bound + 1500*time.Millisecond)
	dials := p.accepts() - before
	p.mute(false)
	t.Logf("%d dials in %v of silence (handshake bound %v)", dials, 2*bound+1500*time.Millisecond, bound)
	if dials < 2 {
		t.Errorf("%d dials while the server was silent; want at least 2 (one per handshake bound)", dials)
	}
	start := time.Now()
	for z.conn.State() != zk.StateHasSession {
		if time.Since(start) > 2*bound+5*time.Second {
			t.Fatalf("no session %v after the server answered again (state %v)", time.Since(start).Round(time.Millisecond), z.conn.State())
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("session %v after the server answered again", time.Since(start).Round(time.Millisecond))
	l := acquire(t, z, testKey(t))
	if err := l.Release(context.Background()); err != nil {
		t.Errorf("Release: %v", err)
	}
}

// TestEnsemble kills the member a holder's client is connected to: the
// client moves to another member, the session and the lock survive, and
// Release works.
func TestEnsemble(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cluster, err := servers.Start(ctx, servers.Needs{ZooKeeper: true}, servers.Options{ZKMembers: 3})
	if err != nil {
		t.Fatalf("start ZooKeeper: %v", err)
	}
	defer cluster.Stop()
	addrs := cluster.Endpoints().ZKServers
	holder, other := newZK(t, 5*time.Second, addrs), newZK(t, 0, addrs)
	key := testKey(t)
	l := acquire(t, holder, key)
	var victim *servers.ZKMember
	for _, m := range cluster.ZooKeeper {
		if m.Addr == holder.conn.Server() {
			victim = m
		}
	}
	if victim == nil {
		t.Fatalf("the holder's server %s is no member", holder.conn.Server())
	}
	if err := victim.Kill(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for holder.conn.State() != zk.StateHasSession || holder.conn.Server() == victim.Addr {
		if time.Now().After(deadline) {
			t.Fatalf("holder not reconnected to another member 5s after the kill")
		}
		time.Sleep(20 * time.Millisecond)
	}
	pctx, pcancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer pcancel()
	if l2, err := other.Acquire(pctx, key); err == nil {
		_ = l2.Release(ctx)
		t.Fatal("another instance took the lock after the holder's server died; want the session to survive")
	}
	if err := l.Release(ctx); err != nil {
		t.Errorf("Release on another member: %v", err)
	}
	if err := victim.Start(ctx); err != nil {
		t.Errorf("Start: %v", err)
	}
}

// proxy forwards TCP connections to a server; cut(true) drops them all and
// drops new ones at once, until cut(false); mute(true) drops them all and
// keeps new ones open without a word, as a stopped process or ZooKeeper
// 3.8.0 just after a restart does, until mute(false).
type proxy struct {
	l       net.Listener
	target  string
	mu      sync.Mutex
	conns   []net.Conn
	isCut   bool
	isMuted bool
	// accepted counts the connections accepted.
	accepted int
}

func newProxy(t *testing.T, target string) *proxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{l: l, target: target}
	t.Cleanup(func() { l.Close(); p.cut(true) })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go p.serve(c)
		}
	}()
	return p
}

func (p *proxy) addr() string { return p.l.Addr().String() }

func (p *proxy) serve(c net.Conn) {
	p.mu.Lock()
	p.accepted++
	if p.isMuted {
		p.conns = append(p.conns, c)
		p.mu.Unlock()
		return
	}
	p.mu.Unlock()
	up, err := net.Dial("tcp", p.target)
	p.mu.Lock()
	if err != nil || p.isCut {
		p.mu.Unlock()
		c.Close()
		if up != nil {
			up.Close()
		}
		return
	}
	p.conns = append(p.conns, c, up)
	p.mu.Unlock()
	go func() { _, _ = io.Copy(up, c); up.Close() }()
	_, _ = io.Copy(c, up)
	c.Close()
}

func (p *proxy) cut(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.isCut = on
	if on {
		p.drop()
	}
}

func (p *proxy) mute(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.isMuted = on
	p.drop()
}

// drop closes every connection; p.mu is held.
func (p *proxy) drop() {
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

func (p *proxy) accepts() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.accepted
}
