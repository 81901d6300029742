// Package faults injects the faults that break locks (SPEC §4): a paused
// instance process, work that outlasts the TTL, a killed or restarted node, a
// partitioned node, a node whose clock jumps. Each fault is bounded in time
// and undone by the end of the run.
package faults
