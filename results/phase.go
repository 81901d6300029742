package results

// Phase is a part of processing one delivery whose latency is recorded.
type Phase int

// The phases, in the order a delivery goes through them. Total runs from the
// payment's intended start (open loop) or actual start (closed loop) to the
// end of release, so a stall of the generator shows up in it.
const (
	Acquire Phase = iota
	Critical
	Release
	Total
	NumPhases
)

// PhaseNames are the JSON names of the phases, indexed by Phase.
var PhaseNames = [NumPhases]string{"acquire", "critical", "release", "total"}

// String returns the phase's JSON name, or "unknown".
func (p Phase) String() string {
	if p < 0 || p >= NumPhases {
		return "unknown"
	}
	return PhaseNames[p]
}
