package faults_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/lockbench/lockbench/servers"
	"github.com/lockbench/lockbench/strategies"
)

// pgReplicaServers starts a Postgres primary with a streaming standby for
// one test, the standby synchronous when sync.
func pgReplicaServers(t *testing.T, sync bool) *servers.Cluster {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a Postgres primary and standby; skipped with -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	c, err := servers.Start(ctx, servers.Needs{Postgres: true}, servers.Options{PgTopology: servers.PgReplica, PgSync: sync})
	if err != nil {
		t.Fatalf("start the Postgres replica topology: %v", err)
	}
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Errorf("stop the Postgres replica topology: %v", err)
		}
	})
	return c
}

// The standby's link is held back, a holder caught, the primary killed and
// the standby promoted. An advisory lock is never WAL-logged: the new
// primary grants it again at once, whether or not the standby is
// synchronous. pg-onconflict's claim row is a commit: asynchronous, the
// promoted standby lacks it and the lock is granted twice (its fencing
// token decides the rest); synchronous, the claim's commit waits for the
// standby, nobody acquires while the link is held back, and nothing is
// granted twice. After each run the old primary is a standby again, so
// the next run fails over the other way.
func TestFailoverPostgres(t *testing.T) {
	for _, sync := range []bool{false, true} {
		name := "async"
		if sync {
			name = "sync"
		}
		t.Run(name, func(t *testing.T) {
			c := pgReplicaServers(t, sync)
			names := []string{"pg-advisory", "pg-onconflict"}
			if !sync {
				names = append(names, "pg-advisory") // on the remade topology
			}
			for _, strategy := range names {
				fencing := strategy == "pg-onconflict"
				s, counts := failoverRun(t, c, strategy, "failover", small(failoverPayments, fencing), 0, false)
				var killed, promoted bool
				for _, e := range s.FaultEvents {
					killed = killed || strings.HasSuffix(e.What, "(the primary) killed")
					promoted = promoted || strings.Contains(e.What, " promoted to primary (pg_promote)")
				}
				if !killed || !promoted {
					t.Errorf("%s: killed %v, promoted %v; want the primary killed and the standby promoted", strategy, killed, promoted)
				}
				if s.Strikes != 1 || s.StrikesMissed != 0 || s.Unknown() {
					t.Errorf("%s: strikes %d, missed %d, %s (%s); want one strike that landed, judged", strategy, s.Strikes, s.StrikesMissed, s.Verdict, s.Unjudged)
				}
				switch {
				case strategy == "pg-advisory":
					if s.Overlaps == 0 || !s.Unsafe {
						t.Errorf("%s: overlaps %d, unsafe %v; want the advisory lock granted again by the promoted standby: overlaps > 0, unsafe", strategy, s.Overlaps, s.Unsafe)
					}
				case sync:
					if s.Overlaps != 0 || s.Unsafe {
						t.Errorf("%s with a synchronous standby: overlaps %d, unsafe %v; want no claim acknowledged while the link was held back: no overlap, safe", strategy, s.Overlaps, s.Unsafe)
					}
				default:
					if s.Overlaps == 0 {
						t.Errorf("%s: overlaps %d; want the claim row the standby never got granted again: overlaps > 0", strategy, s.Overlaps)
					}
					t.Logf("%s: stale rejected %d, stale accepted %d, token reused %d: the fencing sequence after the promotion", strategy, s.StaleRejected, s.StaleAccepted, counts.TokenReused)
				}
			}
		})
	}
}

// On a random schedule the primary of the moment is killed again and
// again, nothing held back: every strike is a kill, a promotion and the
// old primary remade a standby, and is judged; the topology is whole
// after the run.
func TestFailoverPostgresRandom(t *testing.T) {
	c := pgReplicaServers(t, false)
	sc := small(1000, false)
	sc.Seed = 3
	s, _ := failoverRun(t, c, "pg-advisory", "failover:schedule=random,every=2s", sc, 0, false)
	var killed, promoted, remade int64
	for _, e := range s.FaultEvents {
		switch {
		case strings.HasSuffix(e.What, "(the primary) killed"):
			killed++
		case strings.Contains(e.What, " promoted to primary (pg_promote)"):
			promoted++
		case strings.Contains(e.What, " remade a standby of "):
			remade++
		}
	}
	if s.Strikes < 1 || killed != s.Strikes || promoted != s.Strikes || remade != s.Strikes {
		t.Errorf("strikes %d, kills %d, promotions %d, remade standbys %d; want each strike a kill, a promotion and a remade standby", s.Strikes, killed, promoted, remade)
	}
	if s.Unknown() {
		t.Errorf("%s (%s); want it judged", s.Verdict, s.Unjudged)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	target, err := servers.TargetFor(strategies.MustLookup("pg-advisory").Need, c.Endpoints(), c)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := target.PgRoles(ctx); err != nil {
		t.Errorf("after the run: %v; want a primary and its standby", err)
	}
}
