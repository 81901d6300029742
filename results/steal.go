package results

import (
	"math"

	"github.com/prometheus/procfs"
)

// MachineTime is a reading of the whole machine's CPU time from
// /proc/stat (procfs): all of it, and the part the hypervisor ran other
// guests on this machine's virtual CPUs instead (steal). The zero value
// is an unknown reading (no /proc/stat).
type MachineTime struct {
	steal, total float64 // seconds, summed over the CPUs
	known        bool
}

// ReadMachineTime reads the machine's CPU time now.
func ReadMachineTime() MachineTime {
	fs, err := procfs.NewDefaultFS()
	if err != nil {
		return MachineTime{}
	}
	st, err := fs.Stat()
	if err != nil {
		return MachineTime{}
	}
	c := st.CPUTotal
	// Guest time is already in User and Nice.
	total := c.User + c.Nice + c.System + c.Idle + c.Iowait + c.IRQ + c.SoftIRQ + c.Steal
	return MachineTime{steal: c.Steal, total: total, known: true}
}

// StealPercent is the share of the machine's CPU time stolen between
// readings a and b, in percent: NaN when either is unknown or no time
// passed.
func StealPercent(a, b MachineTime) float64 {
	if !a.known || !b.known || b.total <= a.total {
		return math.NaN()
	}
	return 100 * max(0, b.steal-a.steal) / (b.total - a.total)
}
