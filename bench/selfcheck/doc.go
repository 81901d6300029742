// Package selfcheck holds lockbench's harness self-checks, the engines of
// `lockbench compare-redis` and `lockbench compare-postgres`: is the
// harness what is being measured? Each check (Redis, Postgres) measures
// one lock cycle three ways against a local server it starts: with the
// server's own benchmark tool (redis-benchmark, pgbench), with the Go
// client alone (go-redis, pgx, with the strategy's client settings and no
// harness), and with lockbench's strategy (setnx, pg-onconflict) at zero
// hold. It prints their rates, CPU per cycle and ratios round by round,
// then the medians against the targets (lockbench at least 0.95 of the
// bare client's rate, at most 1/0.95 of its CPU per cycle). The method and
// the figures are in docs/harness-cost.md.
//
// This is the command layer: package cli parses the flags (Check.Register,
// Config.Validate) and supplies lockbench's side of a check (Harness, its
// session: the store and the live metrics), and nothing below the command
// (loadgen, strategies) imports this package.
//
// # The Postgres check
//
// compare-postgres runs pgbench (-M prepared) with pg-onconflict's own
// claim and release statements, with the same client count and key space,
// against the local Postgres the check starts; then the same cycle from
// pgx alone (the strategy's pool settings and statement timeouts, no
// harness); then lockbench's pg-onconflict with zero hold and --lock-key
// payment, one instance of --clients workers (runPostgres).
//
// The key space is one key per lock cycle of a measurement, the same keys
// every round (lockbench's payment ids; pgbench's client c takes keys c,
// c + clients, c + 2·clients, …): after the warm-up round every claim takes
// the update path of the ON CONFLICT, as lockbench's do. pgbench's keys are
// the numbers themselves (its scripts cannot build strings), lockbench's
// and pgx's "lockbench:pay:N".
//
// # The CPU profile split
//
// A comparison's rates and its CPU times per cycle are each measured over
// a whole measurement, seconds apart from the other client's: on a shared
// machine both move with the neighbours between one measurement and the
// next (the hypervisor's steal, the other guests' use of the shared
// caches), by more than the harness costs. The CPU profile of the counted
// rounds (profile.go) gives a figure that does not: within each
// measurement it splits the client's samples into those inside the client
// library's calls (go-redis, pgx: the same calls in both) and the rest (the
// bare loop's own code, or the harness). Both parts of one measurement are
// sampled in the same seconds, so whatever slows the machine slows both,
// and their ratio holds; with the library's CPU per cycle as the yardstick,
//
//	lockbench / bare = (1 + rest_lockbench/library_lockbench) / (1 + rest_bare/library_bare)
//
// That is the harness's own work (but see the caveat below).
//
// # Caveats
//
//   - The checks are measurements, not tests: the client, lockbench and the
//     server share the machine, and on a shared machine the rates drift by
//     tens of percent within a minute. Rounds interleave the three
//     measurements (roundOrder) and each ratio is taken within a round; the
//     result is the median of the rounds' ratios, with its interval.
//   - They need the native tools installed (redis-benchmark from
//     redis-tools; pgbench from a PostgreSQL server package) and start
//     their own servers on loopback; they never run against the user's.
//   - The CPU profile split (--cpuprofile, profile.go) counts the harness's
//     own code only: it is blind to the harness making the client
//     library's calls slower (evicting their memory from the caches), which
//     the measured CPU per cycle includes.
//   - Check.Run profiles the process's CPU: one profile runs at a time, so
//     without --cpuprofile a profile already running (a test binary's
//     -cpuprofile) only means no split is printed.
package selfcheck
