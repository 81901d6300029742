// Package plan is capacity planning from an open-loop rate sweep: for each
// strategy, the highest offered rate it sustains, whether that fits a
// target rate, what latency it costs there, and what it risks under faults.
//
// The pieces, one file each:
//
//	judge.go   what "sustainable" means (Sustainable), shared with the matrix
//	sweep.go   the search for the highest sustainable rate (Sweep), driven by
//	           a StepFunc the caller provides, so the package runs nothing itself
//	model.go   the plan as plan.json records it (Report, Line, Step, Cost)
//	risks.go   what a strategy risks under faults: expected from its registry
//	           entry (Expected) or measured in a verdicts.json (Measured)
//	print.go   the plan table for people (Print)
//
// The command `lockbench plan` (package bench/cli) owns the flags, the
// servers and the run directory: it gives Sweep a step function that runs
// one scenario at the offered rate and writes the Report it builds.
//
// Caveats: the sweep assumes a rate that fails would fail at any higher
// rate, so one unlucky step on a shared machine can end it early
// (Config.Confirm re-runs a failing step once against that). A sustainable
// rate is a property of the machine as much as of the lock: the harness,
// the store and every server share its cores. Expected risks are the README's fault table
// applied to the registry entry, not a measurement; only Measured is.
package plan
