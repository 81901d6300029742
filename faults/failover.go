package faults

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/lockbench/lockbench/internal/usage"
	"github.com/lockbench/lockbench/loadgen"
	"github.com/lockbench/lockbench/servers"
	"github.com/lockbench/lockbench/strategies"
)

// Failover defaults.
const (
	// FailoverMinTTL is the shortest TTL a failover run has: 10s. The
	// caught holder must still hold a valid lock while the Sentinels notice
	// the dead primary (down-after 500ms), elect a leader and promote a
	// replica (2-3s here), and a contender takes the lock on the new one;
	// with a TTL shorter than that the lock would also be lost by expiry,
	// as under pause, and WAIT could not be told apart from no WAIT. A
	// shorter --ttl is raised to this.
	FailoverMinTTL = 10 * time.Second
	// FailoverMinWorkers is the fewest workers per instance a failover run
	// has: 8 (a smaller --workers is raised to this; see adjust).
	FailoverMinWorkers = 8
	// DefaultFailoverCatch is how long the fault waits for a holder to
	// catch once replication is held back: 2s. With WAIT nobody acquires
	// while it is (every WAIT times out), so the fault goes on without one.
	DefaultFailoverCatch = 2 * time.Second
	// DefaultFailoverPromote is how long the fault lets the Sentinels
	// promote a replica on their own before it forces a failover (SENTINEL
	// FAILOVER): 3s, well over what it takes here (under 2s); a split vote
	// would otherwise be retried only after twice the failover timeout.
	DefaultFailoverPromote = 3 * time.Second
	// failoverHoldShare is the caught holder's time inside, as a share of
	// the TTL, when hold= is not given: 0.6 (6s of 10s): room for the
	// promotion (forced after DefaultFailoverPromote), for the clients to
	// find the new primary, and for a contender to take the lock there.
	failoverHoldShare = 0.6
	// failoverTail is the load offered after the caught holder's time
	// inside is over: 1s.
	failoverTail = time.Second
	// afterContender is how long a stopped caught holder stays inside once
	// a second holder of its lock key entered: 50ms (awaitContender).
	afterContender = 50 * time.Millisecond
	// writeGrace is how long a continued holder process has to write
	// before later holders of its key are let in: 500ms.
	writeGrace = 500 * time.Millisecond

	// relinkTimeout bounds the wait for a replica's link through its proxy
	// (or to the new primary, when healing): 5s.
	relinkTimeout = 5 * time.Second
)

const failoverParams = "hold=D (how long the caught holder stays inside, within its lock's validity; default 0.6 × TTL), " +
	"catch=D (how long to wait for a holder once replication is held back, default 2s), " +
	"promote=D (how long the Sentinels may take before the failover is forced, default 3s), " +
	"acked=N (replicas whose replication is not held back, so that they acknowledge WAIT, and that die with the primary; default 0), " +
	scheduleParams + " (schedule=random: the primary is killed at random moments, nothing held back or caught; promote= and every= apply)"

func init() {
	register(Kind{
		Name: "failover",
		Description: "hold back replication from the Redis primary to its replicas (their links through proxies that drop every byte), " +
			"catch a holder whose lock only the primary has inside its critical section, kill the primary: the Sentinels promote a replica " +
			"that never had the lock, and a contender takes it while the holder is still inside; the old primary rejoins as a replica " +
			"(--redis-topology sentinel; with --redis-wait nobody acquires while replication is held back); on a Postgres primary with a standby (--pg-topology replica) " +
			"the standby's streaming link is held back, the primary killed and the standby promoted (pg_promote); the old primary stays down for the run",
		Params:     failoverParams,
		AppliesTo:  func(info strategies.Info) bool { return singleRedis(info) || pgLock(info) },
		NeedsLocal: true,
		Adjust: func(sc loadgen.Scenario, p map[string]string) (loadgen.Scenario, error) {
			c, err := parseFailover(p)
			if err != nil {
				return sc, err
			}
			return c.adjust(sc)
		},
		New: func(p map[string]string, target servers.Target) (loadgen.Fault, error) {
			c, err := parseFailover(p)
			if err != nil {
				return nil, err
			}
			switch {
			case target.Need.Backend == strategies.BackendPostgres && c.sched.random:
				return &randomPgFailover{sched: c.sched, target: target}, nil
			case target.Need.Backend == strategies.BackendPostgres:
				return &pgFailover{cfg: c, target: target}, nil
			case c.sched.random:
				return &randomFailover{promote: c.promote, sched: c.sched, target: target}, nil
			}
			return &failover{cfg: c, target: target}, nil
		},
	})
	targetChecks["failover"] = func(t servers.Target) error {
		if t.Need.Backend == strategies.BackendPostgres {
			if !t.PgReplicated() {
				return errors.New("failover needs a Postgres standby lockbench starts: --pg-topology replica")
			}
			return nil
		}
		if !t.Replicated() {
			return errors.New("failover needs a replicated Redis: --redis-topology sentinel (or " + servers.EnvRedisSentinels + ")")
		}
		return nil
	}
	targetChecks["partition"] = func(t servers.Target) error {
		if t.Replicated() {
			return servers.ErrReplicated
		}
		return nil
	}
}

// targetChecks say, for the faults whose working depends on how the
// servers are laid out, whether they can run on a target (Spec.Fits).
var targetChecks = map[string]func(servers.Target) error{}

// Fits reports why the fault cannot run on the servers of target (a
// failover needs a replicated Redis; a partition cannot reroute the clients
// of one), or nil when it can.
func (s Spec) Fits(t servers.Target) error {
	if check, ok := targetChecks[s.Name]; ok {
		return check(t)
	}
	return nil
}

// singleRedis is failover's AppliesTo: single-node Redis locks, which a
// replicated Redis serves.
func singleRedis(info strategies.Info) bool {
	return info.Need.Backend == strategies.BackendRedis && info.Need.Nodes <= 1 && !info.Transactional
}

// failoverConfig is failover's parameters.
type failoverConfig struct {
	hold    time.Duration // 0: failoverHoldShare × TTL, decided at Setup
	catch   time.Duration
	promote time.Duration
	acked   int
	at      float64
	sched   schedule
}

// parseFailover reads failover's parameters. With schedule=random only
// promote= and every= apply: a random strike kills whatever primary there
// is at a random moment, with no holder caught (randomFailover).
func parseFailover(p map[string]string) (failoverConfig, error) {
	ps := newParams("failover", p)
	c := failoverConfig{sched: ps.schedule(), promote: ps.duration("promote", DefaultFailoverPromote)}
	if !c.sched.random {
		c.hold = ps.duration("hold", 0)
		c.catch = ps.duration("catch", DefaultFailoverCatch)
		c.acked = ps.index("acked", 0)
		c.at = c.sched.at
	}
	return c, ps.done()
}

// holdFor is how long the caught holder stays inside with TTL ttl.
func (c failoverConfig) holdFor(ttl time.Duration) time.Duration {
	if c.hold > 0 {
		return c.hold
	}
	return time.Duration(failoverHoldShare * float64(ttl))
}

// adjust is the scenario a failover needs: a TTL of at least
// FailoverMinTTL, FailoverMinWorkers workers, and (open loop) enough load
// after the strike for a contender to come while the caught holder is
// inside: payments (or a duration) raised so that the caught holder's time
// and failoverTail are offered after the share at.
func (c failoverConfig) adjust(sc loadgen.Scenario) (loadgen.Scenario, error) {
	sc.TTL = max(sc.TTL, FailoverMinTTL)
	if err := c.check(sc); err != nil {
		return sc, err
	}
	// The locks a failover resurrects (released on the old primary after
	// replication was held back, or whose release failed while there was
	// no primary: the new one has them until their TTL) keep the workers
	// that want them waiting; with few workers they would be all, and no
	// contender would come for the caught holder's key in time.
	sc.Workers = max(sc.Workers, FailoverMinWorkers)
	after := c.holdFor(sc.TTL) + failoverTail
	if sc.Rate > 0 && sc.Payments > 0 {
		sc.Payments = max(sc.Payments, int(math.Ceil(sc.Rate*after.Seconds()/(1-c.at))))
	}
	if sc.Duration > 0 {
		sc.Duration = max(sc.Duration, time.Duration(float64(after)/(1-c.at)))
	}
	return sc, nil
}

func (c failoverConfig) check(sc loadgen.Scenario) error {
	if c.hold >= sc.TTL {
		return &usage.Error{Flag: "fault", Msg: fmt.Sprintf("failover: hold=%s must be shorter than the TTL (%s): the holder must still hold a valid lock when a contender takes it", c.hold, sc.TTL)}
	}
	return nil
}

// failoverApplies reports why either schedule of the failover cannot run:
// a strategy that is not a single-node Redis lock, a Redis that is not
// replicated, or Sentinels lockbench did not start (it must kill and start
// the nodes).
func failoverApplies(env *loadgen.FaultEnv, target servers.Target) error {
	if !singleRedis(env.Info) {
		return fmt.Errorf("failover does not apply to %s", env.Strategy)
	}
	if err := (Spec{Name: "failover"}).Fits(target); err != nil {
		return err
	}
	if !target.Local() {
		return fmt.Errorf("failover: %w: the Sentinels were given (%s); unset that to let lockbench start its own", servers.ErrNotLocal, target.Given())
	}
	return nil
}
