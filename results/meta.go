package results

import (
	"bufio"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"time"
)

// MetaSchemaVersion is the version of meta.json's layout: 2 since it
// records the build, the servers' versions and the load average. Files
// without schema_version are version 1.
const MetaSchemaVersion = 2

// Meta describes a run directory as a whole: what was run, when, where
// and with what. It is saved as meta.json and shown at the top of
// report.md. Every field is optional; nothing in it is derived from the
// clock, so the files written from the same Meta and runs are
// byte-for-byte the same.
type Meta struct {
	// SchemaVersion is MetaSchemaVersion for a directory lockbench writes.
	SchemaVersion int `json:"schema_version,omitempty"`
	// Title heads report.md; "lockbench report" when empty.
	Title string `json:"title,omitempty"`
	// Command is the command line that produced the directory.
	Command string `json:"command,omitempty"`
	// Date is when the run started.
	Date time.Time `json:"date,omitzero"`
	// Host describes the machine the benchmark ran on.
	Host Host `json:"host,omitzero"`
	// Build is the lockbench binary that ran it.
	Build Build `json:"lockbench,omitzero"`
	// Servers are the versions of the servers lockbench started itself,
	// by kind ("redis": "7.0.15"); servers it was pointed at are not
	// asked.
	Servers map[string]string `json:"servers,omitempty"`
	// LoadBefore and LoadAfter are the host's load averages (1, 5 and 15
	// minutes) when the command began and ended: a busy machine is a
	// reason figures differ.
	LoadBefore *LoadAvg `json:"loadavg_before,omitempty"`
	LoadAfter  *LoadAvg `json:"loadavg_after,omitempty"`
	// StealPercent is the share of the machine's CPU time, in percent,
	// that the hypervisor gave to other guests from the command's start
	// to its end (StealPercent of two ReadMachineTime readings): on a
	// virtual machine, what its neighbours took from the run. Absent
	// where /proc/stat cannot be read.
	StealPercent *float64 `json:"steal_percent,omitempty"`
	// Trials is how many trials each cell was run (--trials); Seed the
	// first trial's seed (--seed).
	Trials int   `json:"trials,omitempty"`
	Seed   int64 `json:"seed,omitempty"`
	// Notes are free-form remarks, one bullet each in report.md.
	Notes []string `json:"notes,omitempty"`
	// Archive describes the directory's packed data (Pack), absent while
	// it is unpacked.
	Archive *ArchiveInfo `json:"archive,omitempty"`
	// Resumptions are the times an interrupted command was continued in
	// this directory (--resume), in order.
	Resumptions []Resumption `json:"resumptions,omitempty"`
}

// Resumption is one continuation of an interrupted command (--resume):
// when it began, how many runs the directory already held, the runs of
// the command line given that it dropped (--force), and the host's load
// averages when it began and ended.
type Resumption struct {
	Date       time.Time `json:"date"`
	RunsBefore int       `json:"runs_before"`
	Dropped    int       `json:"dropped,omitempty"`
	Forced     bool      `json:"forced,omitempty"`
	LoadBefore *LoadAvg  `json:"loadavg_before,omitempty"`
	LoadAfter  *LoadAvg  `json:"loadavg_after,omitempty"`
}

// LoadAvg is the 1-, 5- and 15-minute load averages of a host.
type LoadAvg [3]float64

// CurrentLoad returns this host's load averages from /proc/loadavg, or
// nil where there is none.
func CurrentLoad() *LoadAvg {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return nil
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return nil
	}
	var l LoadAvg
	for i := range l {
		v, err := strconv.ParseFloat(f[i], 64)
		if err != nil {
			return nil
		}
		l[i] = v
	}
	return &l
}

// Build is what the running lockbench binary says about itself
// (runtime/debug.ReadBuildInfo): its module version and the commit it was
// built from.
type Build struct {
	// Version is the main module's version: "(devel)" for a build from a
	// work tree, a tag for `go install …@version`.
	Version string `json:"version,omitempty"`
	// Commit, CommitTime and Modified are the vcs.revision, vcs.time and
	// vcs.modified build settings (the work tree had uncommitted changes).
	Commit     string `json:"commit,omitempty"`
	CommitTime string `json:"commit_time,omitempty"`
	Modified   bool   `json:"modified,omitempty"`
}

// CurrentBuild returns the Build of the running binary; its commit is
// empty for a test binary or a build without version control
// information.
func CurrentBuild() Build {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return Build{}
	}
	b := Build{Version: info.Main.Version}
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			b.Commit = s.Value
		case "vcs.time":
			b.CommitTime = s.Value
		case "vcs.modified":
			b.Modified = s.Value == "true"
		}
	}
	return b
}

// String is the build for people: "(devel) 1a2b3c4d5e6f+modified".
func (b Build) String() string {
	s := b.Version
	if b.Commit != "" {
		c := b.Commit
		if len(c) > 12 {
			c = c[:12]
		}
		s = strings.TrimSpace(s + " " + c)
		if b.Modified {
			s += "+modified"
		}
	}
	return s
}

// Host holds facts about the machine a benchmark ran on.
type Host struct {
	Hostname  string `json:"hostname,omitempty"`
	OS        string `json:"os,omitempty"`
	Arch      string `json:"arch,omitempty"`
	CPU       string `json:"cpu,omitempty"`
	NumCPU    int    `json:"num_cpu,omitempty"`
	GoVersion string `json:"go_version,omitempty"`
	// Kernel is the operating system's release (uname -r).
	Kernel string `json:"kernel,omitempty"`
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
		Kernel:    kernelRelease(),
	}
	h.Hostname, _ = os.Hostname()
	return h
}

// kernelRelease is uname -r, read from /proc where there is one.
func kernelRelease() string {
	data, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(data))
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
