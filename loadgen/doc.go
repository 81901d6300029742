// Package loadgen is the load generator: the tiny bank's payments, the
// instances (app servers) that process them through a lock strategy, and
// the run that drives them and collects what they measured.
//
// A Scenario says everything that shapes a run: accounts and their
// distribution, payments and how many times each is delivered (to distinct
// instances first, then to distinct workers of one), instances and their
// workers, open loop at a rate (latency from each payment's intended start,
// the Pacer's) or closed loop, the work inside the lock, TTL, retries, the
// store and its fencing check. NewWorkload turns it into a reproducible
// payment stream from its seed. Run drives one strategy through it under at
// most one Fault and returns a results.Run: the store's judgement (counts)
// and the workers' latency histograms, per phase, per interval and by
// acquire outcome.
//
// Processing a delivery is: acquire the lock on the lock key (with the
// scenario's retry policy), read "processed?" and the balance from the
// store, do the work, write the new balance and mark the payment processed
// with the lease's fencing token, release. A transactional strategy
// (strategies.Info.Transactional: pg-unique, pg-for-update, pg-optimistic)
// takes no lock from a lock server: each delivery is one transaction on the
// Postgres store (store.Transactor), protected by a unique constraint, the
// account row's lock or a version check (store.TxKind).
// A broker strategy (the queue, strategies.Info.Redelivers) takes no lock
// either: its deliveries publish the payment and take the next message of
// its shard, and the worker processes the payment that message carries
// (the small interfaces of queue.go, found by type assertion); a message
// the broker delivers again counts in Summary.Redeliveries.
//
// Instances run as goroutines, or as OS processes (the test or lockbench
// binary re-executed: call MaybeRunChild first thing in main or TestMain)
// so that a fault can SIGSTOP a whole instance: its process group, so that
// an adapter process the instance started stops with it. Process instances reach the
// coordinator's store and report their measurements over a local
// connection; those a Spawner places on other hosts (loadgen/agent, a
// `lockbench agent` per host) reach it over TCP, with a token, and are
// paused and continued through their agent (Pauser), never by pid.
//
// loadgen knows strategies only through package strategies' interface and
// registry; servers, faults and the command live above it and hand it what
// it needs (a lock config, a store, a Fault already built on its target).
//
// Caveats: every figure is taken on this host's monotonic clock. Memory
// grows with the accounts and the payments in flight, not with the
// payments offered: the stream is generated as it is dispatched, the store
// releases a payment once its deliveries are judged (loadgen/store), and
// with Options.StreamIntervals a long run's intervals go to disk as they close;
// a --duration run lasts its duration at any rate.
package loadgen
