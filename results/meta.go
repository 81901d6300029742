package results

import (
	"bufio"
	"os"
	"runtime"
	"strings"
	"time"
)

// Meta describes a run directory as a whole: what was run, when and where.
// It is saved as meta.json and shown at the top of report.md. Every field is
// optional; nothing in it is derived from the clock, so the files written
// from the same Meta and runs are byte-for-byte the same.
type Meta struct {
	// Title heads report.md; "lockbench report" when empty.
	Title string `json:"title,omitempty"`
	// Command is the command line that produced the directory.
	Command string `json:"command,omitempty"`
	// Date is when the run started.
	Date time.Time `json:"date,omitzero"`
	// Host describes the machine the benchmark ran on.
	Host Host `json:"host,omitzero"`
	// Notes are free-form remarks, one bullet each in report.md.
	Notes []string `json:"notes,omitempty"`
}

// Host holds facts about the machine a benchmark ran on.
type Host struct {
	Hostname  string `json:"hostname,omitempty"`
	OS        string `json:"os,omitempty"`
	Arch      string `json:"arch,omitempty"`
	CPU       string `json:"cpu,omitempty"`
	NumCPU    int    `json:"num_cpu,omitempty"`
	GoVersion string `json:"go_version,omitempty"`
	// Extra holds any other facts worth keeping, such as server versions
	// ("redis": "7.2.4").
	Extra map[string]string `json:"extra,omitempty"`
}

// CurrentHost returns the facts of the machine this process runs on. The
// CPU model is read from /proc/cpuinfo where there is one.
func CurrentHost() Host {
	h := Host{
		OS:        runtime.GOOS,
		Arch:      runtime.GOARCH,
		NumCPU:    runtime.NumCPU(),
		GoVersion: runtime.Version(),
		CPU:       cpuModel(),
	}
	h.Hostname, _ = os.Hostname()
	return h
}

func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		key, val, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(key) == "model name" {
			return strings.TrimSpace(val)
		}
	}
	return ""
}
