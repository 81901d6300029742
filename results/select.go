package results

import "strings"

// Names the report and charts key on. A scenario belongs to a sweep when its
// name starts with the sweep's name ("contention", "contention-quick").
const (
	// FaultNone is the fault of a run without fault injection ("" means
	// the same).
	FaultNone = "none"
	// ScenarioBase is the plain scenario whose latency spectrum is charted.
	ScenarioBase = "base"
	// ScenarioContention names a contention sweep: the same load with more
	// and more contenders per lock key.
	ScenarioContention = "contention"
	// ScenarioPgContention names the contention sweep on the Postgres
	// store, where the strategies that keep the bank in the database run
	// beside the locks.
	ScenarioPgContention = "pg-contention"
	// ScenarioSweep names a rate sweep: the same scenario at rising offered
	// rates (Params.Rate).
	ScenarioSweep = "sweep"
)

// HasFault reports whether a fault was injected in the run.
func (s *Summary) HasFault() bool { return s.Fault != "" && s.Fault != FaultNone }

// InSweep reports whether s is a run of the sweep named sweep (or of a
// variant of it, "contention-quick").
func InSweep(s *Summary, sweep string) bool { return strings.HasPrefix(s.Scenario, sweep) }

// IsSweep reports whether s belongs to either kind of sweep.
func IsSweep(s *Summary) bool {
	return InSweep(s, ScenarioContention) || InSweep(s, ScenarioPgContention) || InSweep(s, ScenarioSweep)
}
