// Package faults injects the faults that break locks (the README's fault table): a paused
// instance process, work that outlasts the TTL, a killed or restarted node, a
// partitioned node, a node whose clock jumps. Each fault is bounded in time
// and undone by the end of the run (the process continued, the node started
// again, the proxy healed, the clock set back), also when the run is
// cancelled; its window and timeline are recorded in the run's summary
// (fault_window, fault_events).
//
// A fault is chosen with --fault NAME[:key=value,…] (Parse). Every fault
// takes at=SHARE, the share of the run's payments offered before it strikes
// (default DefaultAt, 0.3), and schedule=designed|random: with random
// (schedule.go) it strikes again and again from the start of the measured
// run, each strike after an exponential wait with mean every=D (default
// DefaultEvery, 2s) counted from the end of the previous one, until the
// load ends; the waits, and every duration given as a range MIN-MAX (for=,
// down=, hold=), are drawn from the run's seed. Each fault is one strike
// step (striker) that Inject runs on the schedule; Setup and Close run once
// per run, and the faults that catch a holder re-arm their trap per strike.
// Every strike is marked with FaultEnv.Begin and End, which the load
// generator counts and judges (Summary.Strikes, UnsafeStrikes). The others:
//
//   - pause: instance=N (default any), for=D (default 1.5 × TTL + 1s; for
//     etcd its lease, the TTL rounded up to whole seconds and at least 2s).
//     Runs the instances as processes and stops one inside a critical
//     section, then continues it (loadgen.Pauser: SIGSTOP and SIGCONT,
//     sent locally or by the instance's agent).
//   - slow: instance=N, for=D (defaults as pause). The caught critical
//     section's work takes for=D, in whatever instance mode (goroutines,
//     processes, agents).
//   - kill-node: node=N (default 0), down=D (default 3s). SIGKILLs a Redis
//     node, the etcd member or Postgres and starts it again.
//   - restart-node, clock-jump: node=N (default 0; for redlock the middle
//     node), hold=D (default TTL/2), split=on|off (default on); clock-jump
//     also jump=D (default the lease TTL + 1s). Redis strategies only.
//   - partition: node=N (default 0), mode=cut|delay|reset (default cut),
//     delay=D (default 200ms), for=D (default 3s). mode=reset resets every
//     connection through the proxy (TCP RST both ways) while a holder is
//     inside its critical section, as a load balancer, a proxy or a
//     failover does; for=D then refuses (resets) new connections for D
//     (default 0: accepted at once), and hold=D (default TTL/2 + for) is
//     how long the caught holder stays inside.
//   - failover (--redis-topology sentinel, single-node Redis strategies):
//     hold=D (default 0.6 × TTL), catch=D (2s), promote=D (3s), acked=N
//     (0). Holds replication back from the primary, catches a holder whose
//     lock only the primary has, kills the primary; the Sentinels promote
//     a replica, a contender takes the lock while the holder is inside,
//     and the old primary rejoins as a replica (failover.go). With
//     schedule=random the primary of the moment is killed at random
//     moments instead, nothing held back (failover_random.go).
//
// # How the faults hit every time
//
// pause, slow, restart-node, clock-jump and partition's mode=reset act from
// inside the store's Enter (loadgen.FaultEnv.OnEnter), synchronously, on the
// first holder of a payment: nobody has processed that payment yet, the
// holder will write it, and the payment's other delivery is waiting for the
// lock. Keeping that holder inside past its lock (pause, slow), making the
// lock's node forget it while the holder is inside (restart-node,
// clock-jump), or killing the holder's own connection to a lock that lives
// as long as its session (mode=reset on pg-advisory: the server drops the
// lock with the session) therefore lets the other delivery process the
// payment too: double-processing unless the store checks a fencing token.
// A lock held by a lease on the server (setnx, pg-onconflict) outlives a
// reset connection, so mode=reset with hold within the TTL costs it
// availability (calls on the reset connections fail), not safety.
//
// A designed strike must land to prove anything. It says when it made the
// lock forgotten (FaultEnv.Forgot: the node back empty, the clock jumped,
// the connections reset, the lease past its TTL), and missed when no other
// holder (none of the holder's instance, if its process was stopped) was
// granted that lock since the catch, nor, from then until the holder was
// let go, got an answer from it (granted, or refused) or waited on it for
// loadgen.AskSpan, and the window saw no unsafe outcome
// (Summary.StrikesMissed); a designed strike that caught nobody missed, and
// so did a random failover whose run ended before a replica was promoted.
// A run whose every strike missed is unknown. Where the instances run in lockbench's
// process, the strike catches only a holder whose payment another delivery
// is asking for at that moment (FaultEnv.OtherAsking), is judged as it
// ends, and one that missed is struck again while payments are still
// offered, up to MaxDesignedStrikes. With instances in processes or on
// agents, whose acquires the coordinator learns only after the fact, it is
// judged at the run's end and not struck again.
//
// Redlock needs the failed node in both majorities. With split on (and an
// odd number of nodes), restart-node and clock-jump route the nodes after the
// first quorum (3 and 4 of 5) through toxiproxy proxies and refuse them to
// every instance when the fault begins, so that the caught holder's majority
// is {0, 1, 2}; node 2 then fails, the proxies heal, and a contender's
// majority is {2, 3, 4} — Kleppmann's scenario ("How to do distributed
// locking"), with the holder still inside its lock's validity.
//
// # Catching a holder
//
// Every fault that acts while a holder is certainly inside (failover,
// restart-node and clock-jump, partition's mode=reset, pause, slow) catches
// it with a catcher: a trap, a way to keep the holder inside, and a way to
// let it go. A holder is kept inside in one of two ways. An instance
// process is stopped whole (SIGSTOP through its Pauser) and continued by
// resume: nothing of it runs, its lock's keepalive included, until the
// fault says so. An in-process instance shares this process and cannot be
// stopped alone, so its section is ordered to last longer instead
// (FaultEnv.SlowNext), and ends by itself.
//
// The act given to newCatcher, and with it stop or keep, runs in the hook,
// on the goroutine of the holder's Enter, while catch, resume and Close run
// on the fault's. The handles are copied by see before catch arms the trap,
// and the trap's armed state orders that copy before the hook reads it. The
// process stopped is kept under the catcher's mutex: the trap hands the
// caught holder to catch only once its act has run, so a resume after catch
// returned finds it, and resume called again (by Close, after a strike that
// already let the holder go) finds none and does nothing, so a process is
// continued at most once per stop. Every wait is catch's, which ends with
// its ctx.
//
// # The failover fault
//
// Replication from the primary is held back before the lock is taken, not
// after: a primary sends a write to its replicas microseconds after it
// executes it, before the client has even read its reply, so a fault that
// waited for a holder and then cut the links would always be too late. The
// replicas' links are therefore routed through proxies at the strike
// (REPLICAOF the proxy: a partial resync, milliseconds), and the proxies
// then drop every byte both ways. The Sentinels re-point a replica that
// replicates from an address other than the primary's only a failover
// timeout (servers.SentinelFailoverTimeout) after they notice, long after
// the fault is over. Every lock taken from then on exists on the primary
// alone; the trap catches the first holder of a new payment whose lock key
// no replica has (one taken before the cut would be on them), keeps it
// inside its critical section, and the primary is killed. The Sentinels
// promote a replica, which never had that lock; clients find the new
// primary through the Sentinels, and the next holder of the lock key gets
// it there while the caught holder is still inside (watchContender then
// fixes the order of their writes). The old primary is started again and
// rejoins as a replica of the new one.
//
// With WAIT nobody acquires while replication is held back: every WAIT
// times out, the lock is released and counts as not acquired. The fault
// waits catch=D for a holder, then kills the primary anyway, so that the
// failover's cost is measured too. With acked=N the first N replicas keep
// replicating, acknowledge WAIT N, and are killed with the primary: the
// replica promoted never had the lock, WAIT or not.
//
// The kill leaves, on the new primary, the locks that were released on the
// old one after the cut, and those whose release failed while there was no
// primary: they block their keys until their TTL (the availability a
// failover costs besides its outage). A contender that was already waiting
// for the caught holder's lock gives up when the primary dies (the load
// generator does not retry an unavailable server), so the lock is granted
// twice to a later delivery of the same key: with --lock-key payment there
// is none, and the run shows only the outage.
//
// # Caveats
//
//   - Faults that kill, restart or move the clock of a server need servers
//     lockbench started (ErrNeedsLocalServers otherwise); clock-jump needs
//     them under libfaketime, which Spec.ServerOptions asks for. partition
//     works with given servers too: it only reroutes the lock config.
//   - A Redis node comes back empty after kill-node and restart-node. The
//     fencing strategy's token counter lives there too: after the restart
//     tokens start again from 1, below what the store has seen, so with the
//     store's check on every later write is refused as stale (safe, and
//     unavailable), and with it off they are counted as stale accepted.
//   - partition's cut drops every byte both ways (toxiproxy's timeout toxic)
//     and, when it heals, closes the connections that lived through it:
//     bytes were lost mid-stream, so their protocol state is gone.
//   - partition's reset uses a plain TCP forwarder rather than toxiproxy,
//     which can drop its connections only by stopping its listener: a
//     client reconnecting in that moment would be refused, and the outcome
//     would depend on timing. With for=D the payment's other delivery may
//     give up on the reset connections (the load generator does not retry
//     an unavailable server) instead of taking the lock; the default, for
//     unset, shows the double grant every run.
//   - slow slows the caught section by ordering, from inside the holder's
//     own Enter on the coordinator, that the instance's next section last
//     for=D (loadgen.FaultEnv.SlowNext); the order rides on that Enter's
//     answer, over the wire for an instance process. Another worker of the
//     same instance entering in the microseconds between could take it
//     instead. restart-node, clock-jump and partition's reset hold an
//     in-process holder the same way (a process they stop).
//   - kill-node on Postgres refuses --store postgres: the store would die
//     with the lock server.
package faults
