// Package bench holds lockbench's `go test -bench` benchmarks (the command
// itself is in cmd/lockbench and bench/cli; the servers it starts are
// package servers). Run them with
//
//	go test -run '^$' -bench . -benchtime 2000x -count 10 ./bench/ > new.txt
//	benchstat old.txt new.txt
//
// # What is measured
//
// BenchmarkLock/strategy=NAME/contenders=N measures lock cycles (acquire →
// critical section → release) with N contenders on one lock key. Each b.N
// is one lock cycle. It drives the real load generator (loadgen.Run) in a
// closed loop rather than calling Acquire in a bare loop, because that is
// the only way to report the `unsafe` count honestly: the critical section
// reads and writes the tiny bank's store, and the store — not the
// benchmark — judges double-processing, lost updates and stale writes. The
// shape is chosen so that "N contenders" is exact:
//
//   - N instances, each with its own strategy object (its own connections,
//     its own in-process mutex), as N app servers would have, and one
//     worker each;
//   - every payment is delivered to all N instances at once (deliveries =
//     N), on one account with the lock on the account, so N holders race
//     for the same key on every payment: one processes it, N−1 take the
//     lock after it and find it processed;
//   - the critical section is the store's read and write, each a round
//     trip to a store served on a loopback port, and nothing else (zero
//     hold). Go sleeps under a millisecond last about a millisecond on an
//     idle process, so any hold would swamp the lock's own cost; the round
//     trips keep the section wide enough that two holders inside at once
//     (nolock, or mutex across instances) are caught every time;
//   - retries follow the scenario default (jittered backoff from 1ms to
//     50ms), so under contention acquire latency includes the backoff a
//     real client would sleep. Blocking strategies (etcd, mutex) wait in
//     Acquire instead.
//
// ns/op is the measured run time divided by the lock cycles attempted
// (payments × N): instance start-up (connections, etcd sessions) and
// shutdown are not timed. The custom metrics are acquire-p50-ns and
// acquire-p99-ns (HDR histogram quantiles of the acquire phase), ops/s
// (completed lock cycles per second), unsafe (duplicates + lost +
// overdrafts + lost updates + stale writes accepted, as in summary.json)
// and failed (cycles that gave up after the 5s acquire timeout or met a
// server error: a result, not a failure of the benchmark).
// nolock and mutex are unsafe at every contention above 1 by design: with
// one instance per contender, nobody is excluded. nolock at contenders=1
// is the ceiling of this setup: the harness plus two store round trips.
//
// BenchmarkHarnessCeiling runs the same load generator, recording on,
// against nolock with no hold on one instance with GOMAXPROCS workers and
// reports ops/s and ops/cpu-s (lock cycles per CPU-second of the benchmark
// process): the most the harness itself can do. A strategy whose ops/s
// comes near it is measuring the harness, not the lock.
//
// BenchmarkAdapterProtocol/runtime=node|python runs the no-op adapters
// against in-process nolock (runtime=nolock) and reports the CPU per
// acquire+release cycle of lockbench and of the adapter process: what the
// adapter protocol itself costs (docs/adapters.md), not a library's speed.
//
// # Servers
//
// The servers (5 Redis nodes, etcd, PostgreSQL) are started once, on
// loopback, the first time a benchmark needs them, and stopped when the
// test binary exits. LOCKBENCH_REDIS_ADDRS, LOCKBENCH_ETCD_ENDPOINTS and
// LOCKBENCH_PG_DSN point the benchmarks at servers of your own instead
// (that is how to compare two Redis versions). When the servers cannot be
// started BenchmarkLock is skipped with one message saying why;
// BenchmarkHarnessCeiling needs no server and still runs.
//
// # Caveats
//
// The load generator, the store and the servers share the machine, so
// absolute numbers are this machine's; compare runs made on the same one.
// With -benchtime 2000x a contenders=16 case runs 125 payments, enough for
// p50 and a rough p99; use a larger -benchtime for tail latency (and for
// BenchmarkHarnessCeiling, whose CPU time includes the run's set-up).
package bench
