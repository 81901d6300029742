package conformance

import (
	"context"
	"fmt"
	"time"

	"github.com/lockbench/lockbench/servers"
	"github.com/lockbench/lockbench/strategies"
)

// Timing of the failover case.
const (
	// FailoverStreamLimit bounds one Acquire of the stream while the
	// primary is dead or being replaced: DownLimit, as for a dead server.
	FailoverStreamLimit = DownLimit
	// FailoverRecoverLimit is how soon after the primary died Acquire must
	// succeed again on the new one: 30s. The Sentinels take about 2s, but
	// Sentinels that just gave up a failover (every node down, in the
	// server-down case before this one) try again only twice the failover
	// timeout (12s) later; should that not do, the case forces a failover
	// after failoverForceAfter, as an operator would.
	FailoverRecoverLimit = 30 * time.Second

	failoverForceAfter = 15 * time.Second
	failoverStreamGap  = 20 * time.Millisecond
)

// notReplicated is notRun for the failover case.
func notReplicated(h *harness) string {
	if !h.target.Replicated() && !h.target.PgReplicated() {
		return "not a replicated Redis or a Postgres with a standby (run on the sentinel or the Postgres replica topology)"
	}
	return cannotStop(h)
}

// testPgFailoverStream is the failover case on a Postgres primary with a
// standby: the primary is killed in the middle of a stream of acquires and
// the standby promoted (there is no Sentinel to do it); no call hangs, and
// the same strategy object acquires again on the new primary, found
// through its multi-host DSN. The old primary is then remade a standby.
func testPgFailoverStream(t T, h *harness) {
	s := h.open(t, LongTTL, "A")
	ctx, cancel := context.WithTimeout(context.Background(), FailoverRecoverLimit+restartTimeout)
	defer cancel()
	old, standby, err := h.target.PgRoles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	promoted := false
	kill := func() {
		if err := old.Kill(); err != nil {
			t.Fatal(err)
		}
	}
	streamThrough(t, h, s, kill, func(int, time.Duration) {
		if !promoted {
			if err := standby.Promote(ctx); err != nil {
				t.Fatal(err)
			}
			promoted = true
		}
	})
	if !promoted {
		t.Fatal("Acquire succeeded with the primary killed and no standby promoted")
	}
	if err := h.target.PgRebuild(ctx, old, standby); err != nil {
		t.Fatal(err)
	}
	release(t, acquire(t, s, h.key(t)+"/after-rebuild"))
}

// testFailoverStream kills the primary in the middle of a stream of
// acquires: no call hangs (each returns a lease or an error within
// FailoverStreamLimit), and once the Sentinels have promoted a replica the
// same strategy object acquires again, on the new primary.
func testFailoverStream(t T, h *harness) {
	if h.target.PgReplicated() {
		testPgFailoverStream(t, h)
		return
	}
	s := h.open(t, LongTTL, "A")
	cfg := h.target.Config
	ctx, cancel := context.WithTimeout(context.Background(), FailoverRecoverLimit+restartTimeout)
	defer cancel()
	old, _, err := h.target.Roles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var restart func()
	forced := false
	streamThrough(t, h, s, func() { restart = h.stop(t, []servers.Node{old.Node}) }, func(_ int, elapsed time.Duration) {
		if elapsed > failoverForceAfter && !forced {
			forced = true
			if ferr := servers.ForceFailover(ctx, cfg.RedisSentinels, cfg.RedisMaster); ferr != nil {
				t.Logf("force a failover: %v", ferr)
			} else {
				t.Logf("no promotion after %v: failover forced", failoverForceAfter)
			}
		}
	})
	// The old primary comes back as a replica of the new one, once the
	// Sentinels agree on which that is (Roles waits for that).
	now, _, err := h.target.Roles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if now.Addr == old.Addr {
		t.Fatalf("the Sentinels still name the killed primary %s", old.Addr)
	}
	restart()
	release(t, acquire(t, s, h.key(t)+"/after-rejoin"))
}

// streamThrough is the failover case's stream of acquires on s: ten that
// must succeed, then kill, then acquires failoverStreamGap apart until one
// succeeds, each within FailoverStreamLimit, the first success within
// FailoverRecoverLimit of the kill. After each failure it calls fix with
// their count and the time since the kill, to bring a new primary about.
// Each attempt has a key of its own: a lock taken on the old primary just
// before it died may live on (replicated) on the new one until its TTL.
func streamThrough(t T, h *harness, s strategies.Strategy, kill func(), fix func(failures int, since time.Duration)) {
	attempt := 0
	try := func() (strategies.Lease, error, time.Duration) {
		attempt++
		key := fmt.Sprintf("%s/%d", h.key(t), attempt)
		var (
			l   strategies.Lease
			err error
		)
		took, ok := within(FailoverStreamLimit, func(ctx context.Context) { l, err = s.Acquire(ctx, key) })
		if !ok {
			t.Fatalf("attempt %d: Acquire still running after %v; want a lease or an error within %v", attempt, took, FailoverStreamLimit)
		}
		return l, err, took
	}
	for range 10 { // the stream before the failover
		l, err, _ := try()
		if err != nil {
			t.Fatalf("before the failover: Acquire: got %v; want a lease", err)
		}
		release(t, l)
	}
	kill()
	killed := time.Now()
	failures := 0
	for {
		l, err, took := try()
		if err == nil {
			release(t, l)
			t.Logf("acquires succeed again %v after the primary was killed (%d failed meanwhile, each within %v)",
				time.Since(killed).Round(time.Millisecond), failures, FailoverStreamLimit)
			return
		}
		failures++
		if failures == 1 {
			t.Logf("first failure after the kill, in %v: %v", took.Round(time.Millisecond), err)
		}
		elapsed := time.Since(killed)
		if elapsed > FailoverRecoverLimit {
			t.Fatalf("no Acquire succeeded %v after the primary was killed (last: %v); want the new primary used within %v", elapsed, err, FailoverRecoverLimit)
		}
		fix(failures, elapsed)
		time.Sleep(failoverStreamGap)
	}
}
