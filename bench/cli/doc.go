// Package cli is the lockbench command: Run(ctx, args, stdout, stderr) does
// everything main would, so tests drive the real command in-process (as
// benchstat's main does).
//
// Exit codes: 0 done, 2 bad usage (one line naming the flag and
// what it accepts), 3 unsafe with --fail-on-unsafe, 4 a regression or a
// missed target with --fail-on-regression or --fail-below, 130
// interrupted (Ctrl-C or SIGTERM: the partial results are kept, and said
// so), 1 anything else (ExitCode).
package cli
