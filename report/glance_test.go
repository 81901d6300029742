package report

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockbench/lockbench/results"
	"github.com/lockbench/lockbench/results/resultstest"
)

// glanceRun is one run of scenario "verdicts": strategy under fault,
// unsafe (a duplicate) or not, its longest overlap overlapNs.
func glanceRun(strategy, fault string, fencing, unsafe bool, trial int, overlapNs int64) results.Summary {
	s := results.Summary{Strategy: strategy, Scenario: "verdicts", Fault: fault, Fencing: fencing, Trial: trial,
		Payments: 100, Processed: 100, OverlapMaxNs: overlapNs,
		Params: results.Params{Instances: 2, Workers: 4, Seed: int64(trial), Fault: fault}}
	if unsafe {
		s.Duplicates, s.Overlaps = 2, 2
	}
	if fault != results.FaultNone {
		s.Strikes = 1
	}
	s.Finish()
	return s
}

// glanceTrials are n trials of strategy under fault, the trials in unsafe
// unsafe, trial k's longest overlap k·overlapNs.
func glanceTrials(strategy, fault string, fencing bool, n int, unsafe map[int]bool, overlapNs int64) []results.Summary {
	var ss []results.Summary
	for k := 1; k <= n; k++ {
		ss = append(ss, glanceRun(strategy, fault, fencing, unsafe[k], k, int64(k)*overlapNs))
	}
	return ss
}

// report.md opens with the verdicts at a glance, right after its header:
// the grid (an unsafe cell with its k of N and exposure, a cell not run
// as a dash), a reading per strategy, then the scenarios as before.
func TestReportOpensWithGlance(t *testing.T) {
	var ss []results.Summary
	ss = append(ss, glanceTrials("setnx", results.FaultNone, false, 6, nil, 0)...)
	ss = append(ss, glanceTrials("setnx", "pause", false, 6, map[int]bool{2: true, 4: true, 5: true}, int64(200*time.Millisecond))...)
	ss = append(ss, glanceTrials("etcd", "pause", true, 6, nil, int64(time.Millisecond))...)
	var b bytes.Buffer
	if err := WriteReport(&b, ss, resultstest.TestMeta(), ChartSet{}, results.StandardLayout); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	var sections []string
	for _, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(line, "## ") {
			sections = append(sections, line)
		}
	}
	if len(sections) < 2 || sections[0] != "## Verdicts at a glance" || sections[1] != "## Scenarios" {
		t.Fatalf("sections = %q; want \"## Verdicts at a glance\" first, then \"## Scenarios\"", sections)
	}
	glance := md[strings.Index(md, sections[0]):strings.Index(md, sections[1])]
	lines := strings.Split(glance, "\n")
	if !strings.HasPrefix(lines[2], "| strategy") {
		t.Errorf("the section starts %q; want the grid's header", lines[2])
	}
	for _, want := range []string{
		"| strategy | none | pause |",                         // faults in FaultOrder
		"| setnx | SAFE 0 of 6 | **UNSAFE 3 of 6 · 700ms** |", // k of N, the median of 200ms, 400ms, … 1.2s
		"| etcd | — | SAFE 0 of 6 · 3.50ms |",                 // not run; safe with overlaps
		"- **setnx**: unsafe under pause (3 of 6)\n",
		"- **etcd**: safe under pause\n",
	} {
		if !strings.Contains(squeeze(glance), want) {
			t.Errorf("verdicts at a glance lack %q:\n%s", want, glance)
		}
	}
}

// squeeze collapses the padding of a Markdown table's cells.
func squeeze(md string) string {
	for strings.Contains(md, "  ") {
		md = strings.ReplaceAll(md, "  ", " ")
	}
	return md
}

// Without a fault, report.md has no verdicts at a glance.
func TestReportWithoutFaultHasNoGlance(t *testing.T) {
	var b bytes.Buffer
	ss := resultstest.Summaries(resultstest.BaseFixtures(0))
	if err := WriteReport(&b, ss, resultstest.TestMeta(), ChartSet{}, results.StandardLayout); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "at a glance") {
		t.Errorf("report.md of fault-free runs has the verdicts at a glance:\n%s", b.String())
	}
}

// A reading says only what its row shows.
func TestGlanceReading(t *testing.T) {
	all := map[int]bool{1: true, 2: true}
	tests := []struct {
		name string
		runs []results.Summary
		want string
	}{
		{
			// The brief's example: some faults unsafe, some safe, in
			// FaultOrder whatever order they ran in.
			"mixed",
			slices.Concat(glanceTrials("setnx", "partition", false, 2, nil, 0), glanceTrials("setnx", "pause", false, 2, all, 0),
				glanceTrials("setnx", "kill-node", false, 2, nil, 0), glanceTrials("setnx", "slow", false, 2, all, 0)),
			"unsafe under pause, slow; safe under kill-node, partition",
		},
		{
			// Every fault safe; the safe baseline goes unsaid.
			"all safe",
			slices.Concat(glanceTrials("etcd", results.FaultNone, true, 2, nil, 0), glanceTrials("etcd", "pause", true, 2, nil, 0),
				glanceTrials("etcd", "slow", true, 2, nil, 0)),
			"safe under every fault run",
		},
		{
			// Every fault unsafe in every trial.
			"all unsafe",
			slices.Concat(glanceTrials("setnx", "pause", false, 2, all, 0), glanceTrials("setnx", "slow", false, 2, all, 0)),
			"unsafe under every fault run",
		},
		{
			// Unsafe in some trials only: the count says how often.
			"partly unsafe",
			slices.Concat(glanceTrials("setnx", "pause", false, 2, map[int]bool{1: true}, 0), glanceTrials("setnx", "slow", false, 2, all, 0)),
			"unsafe under pause (1 of 2), slow",
		},
		{
			// One fault: named, not "every".
			"one fault",
			glanceTrials("etcd", "pause", true, 1, nil, 0),
			"safe under pause",
		},
		{
			// Unsafe at the baseline, and never faulted.
			"unsafe without a fault",
			glanceTrials("nolock", results.FaultNone, false, 2, all, 0),
			"unsafe even without a fault; not run under a fault",
		},
		{
			// Safe at the baseline, and never faulted.
			"baseline only",
			glanceTrials("mutex", results.FaultNone, false, 2, nil, 0),
			"safe without a fault; not run under a fault",
		},
	}
	for _, tt := range tests {
		g := glanceOf(tt.runs)
		if len(g.Rows) != 1 {
			t.Fatalf("%s: %d rows; want 1", tt.name, len(g.Rows))
		}
		if got := g.reading(g.Rows[0]); got != tt.want {
			t.Errorf("%s: reading %q; want %q", tt.name, got, tt.want)
		}
	}
}
