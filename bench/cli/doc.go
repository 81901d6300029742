// Package cli is the lockbench command: Run(ctx, args, stdout, stderr) does
// everything main would, so tests drive the real command in-process (as
// benchstat's main does).
//
// Exit codes: 0 done, 2 bad usage (one line naming the flag and
// what it accepts), 3 unsafe with --fail-on-unsafe, 4 a regression or a
// missed target with --fail-on-regression or --fail-below, 130
// interrupted (Ctrl-C or SIGTERM: the partial results are kept, and said
// so), 1 anything else (ExitCode).
//
// # The matrix
//
// `lockbench matrix` runs its fault-free parts in three steps (faultFree).
// Transactional strategies (pg-unique) run on the Postgres store only: they
// leave the memory-store scenarios to the locks and get scenarios of their
// own, where every strategy runs on the Postgres store.
//
//  1. The base scenario: the latency spectrum and the results table; on
//     the Postgres store, what no lock costs against the locks.
//  2. Contention: the same load on fewer and fewer accounts, and on the
//     Postgres store the database as the lock against the locks.
//  3. The open-loop rate sweep: the latency–throughput curve and its knee.
//     A strategy's sweep stops after the first rate it sustains in no more
//     than half of its trials.
package cli
