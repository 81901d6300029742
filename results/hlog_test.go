package results_test

import (
	"bytes"
	"strings"
	"testing"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/lockbench/lockbench/results"
	"github.com/lockbench/lockbench/results/resultstest"
)

func TestHlogRoundTrip(t *testing.T) {
	tests := []struct {
		name  string
		start int64 // Summary.StartUnixNs
		run   results.Run
	}{
		// Intervals relative to an unknown start: no StartTime line.
		{"no start time", 0, resultstest.MakeRun(resultstest.Fixture{Strategy: "setnx", Scenario: "base", AcquireNs: 250e3, Intervals: 5})},
		// A real wall-clock start, not on a whole second.
		{"with start time", 1764455700123456789, resultstest.MakeRun(resultstest.Fixture{Strategy: "etcd", Scenario: "verdicts", Fault: "pause",
			Fencing: true, AcquireNs: 2.5e6, Intervals: 8, Window: &[2]int{2, 4}})},
		// No intervals: the whole run is logged as one interval.
		{"whole run only", 1764455700e9, resultstest.MakeRun(resultstest.Fixture{Strategy: "redlock", Scenario: "sweep", AcquireNs: 9e5})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.run.Summary.StartUnixNs = tt.start
			want, wholeRun := results.LoggedIntervals(tt.run)
			for p := results.Phase(0); p < results.NumPhases; p++ {
				var buf bytes.Buffer
				if err := results.WriteHlog(&buf, tt.run, p); err != nil {
					t.Fatal(err)
				}
				text := buf.String()
				if got := strings.Contains(text, "#[StartTime: "); got != (tt.start != 0) {
					t.Errorf("%s: StartTime line present = %v; want %v", p, got, tt.start != 0)
				}
				got, err := results.ReadHlog(bytes.NewReader(buf.Bytes()), p)
				if err != nil {
					t.Fatal(err)
				}
				if len(got) != len(want) {
					t.Fatalf("%s: got %d intervals; want %d", p, len(got), len(want))
				}
				for i := range want {
					g, w := got[i], want[i]
					if g.StartNs != w.StartNs || g.EndNs != w.EndNs {
						t.Errorf("%s interval %d: got [%d, %d) ns; want [%d, %d)", p, i, g.StartNs, g.EndNs, w.StartNs, w.EndNs)
					}
					gh, wh := g.Hists[p], w.Hists[p]
					if gh.TotalCount() != wh.TotalCount() || gh.Max() != wh.Max() ||
						gh.ValueAtQuantile(50) != wh.ValueAtQuantile(50) || gh.ValueAtQuantile(99) != wh.ValueAtQuantile(99) {
						t.Errorf("%s interval %d: got count %d p50 %d p99 %d max %d; want %d %d %d %d", p, i,
							gh.TotalCount(), gh.ValueAtQuantile(50), gh.ValueAtQuantile(99), gh.Max(),
							wh.TotalCount(), wh.ValueAtQuantile(50), wh.ValueAtQuantile(99), wh.Max())
					}
					if got := gh.Tag() == results.WholeRunTag; got != wholeRun {
						t.Errorf("%s interval %d: tagged %q; want whole-run tag %v", p, i, gh.Tag(), wholeRun)
					}
					for q := results.Phase(0); q < results.NumPhases; q++ {
						if q != p && g.Hists[q] != nil {
							t.Errorf("%s interval %d: phase %s set; want nil", p, i, q)
						}
					}
				}
			}
		})
	}
}

// TestHlogLibraryReader reads a log with nothing but hdrhistogram-go's own
// reader, as any HdrHistogram tool would.
func TestHlogLibraryReader(t *testing.T) {
	run := resultstest.MakeRun(resultstest.Fixture{Strategy: "fencing", Scenario: "base", Fencing: true, AcquireNs: 3e5, Intervals: 6})
	run.Summary.StartUnixNs = 1764455700e9
	var buf bytes.Buffer
	if err := results.WriteHlog(&buf, run, results.Total); err != nil {
		t.Fatal(err)
	}
	lr := hdrhistogram.NewHistogramLogReader(&buf)
	merged := results.NewHistogram()
	n := 0
	for {
		h, err := lr.NextIntervalHistogram()
		if err != nil {
			t.Fatal(err)
		}
		if h == nil {
			break
		}
		if got, want := h.StartTimeMs(), int64(1764455700e3)+int64(n)*1000; got != want {
			t.Errorf("interval %d starts at %d ms since the epoch; want %d", n, got, want)
		}
		merged.Merge(h)
		n++
	}
	if n != 6 {
		t.Errorf("got %d interval histograms; want 6", n)
	}
	if got, want := merged.TotalCount(), run.Total[results.Total].TotalCount(); got != want {
		t.Errorf("merged count %d; want %d", got, want)
	}
	if got, want := merged.ValueAtQuantile(99.9), run.Total[results.Total].ValueAtQuantile(99.9); got != want {
		t.Errorf("merged p99.9 %d; want %d", got, want)
	}
}

func TestFileIDs(t *testing.T) {
	ss := []results.Summary{
		{Strategy: "setnx", Scenario: "sweep", Fault: "none"},
		{Strategy: "setnx", Scenario: "sweep", Fault: "none"},
		{Strategy: "etcd", Scenario: "sweep", Fault: "none", Fencing: true},
		{Strategy: "setnx", Scenario: "sweep", Fault: "none"},
	}
	got := results.FileIDs(ss)
	want := []string{"setnx.sweep.none.unfenced", "setnx.sweep.none.unfenced.2", "etcd.sweep.none.fenced", "setnx.sweep.none.unfenced.3"}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("FileIDs[%d] = %q; want %q", i, got[i], want[i])
		}
	}
	if got, want := results.HlogName(got[1], results.Acquire), "setnx.sweep.none.unfenced.2.acquire.hlog"; got != want {
		t.Errorf("HlogName = %q; want %q", got, want)
	}
}

// A streamed run's interval log reads back as the one WriteHlog writes
// for the same run holding its intervals: same intervals, same counts.
func TestHlogStream(t *testing.T) {
	run := resultstest.MakeRun(resultstest.Fixture{Strategy: "setnx", Scenario: "base", AcquireNs: 250e3, Intervals: 6})
	run.Summary.StartUnixNs = 1764455700123456789
	s, err := results.NewHlogStream(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, iv := range run.Intervals {
		if err := s.Write(iv); err != nil {
			t.Fatal(err)
		}
	}
	if s.Len() != len(run.Intervals) {
		t.Errorf("Len() = %d; want %d", s.Len(), len(run.Intervals))
	}
	streamed := run
	streamed.Intervals = nil // the run kept none
	for p := results.Phase(0); p < results.NumPhases; p++ {
		var a, b bytes.Buffer
		if err := results.WriteHlog(&a, run, p); err != nil {
			t.Fatal(err)
		}
		if err := s.WriteHlog(&b, streamed, p); err != nil {
			t.Fatal(err)
		}
		want, err := results.ReadHlog(&a, p)
		if err != nil {
			t.Fatal(err)
		}
		got, err := results.ReadHlog(&b, p)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("%s: got %d intervals; want %d", p, len(got), len(want))
		}
		for i := range want {
			g, w := got[i], want[i]
			if g.StartNs != w.StartNs || g.EndNs != w.EndNs || g.Hists[p].TotalCount() != w.Hists[p].TotalCount() ||
				g.Hists[p].ValueAtQuantile(99) != w.Hists[p].ValueAtQuantile(99) {
				t.Errorf("%s interval %d: got [%d, %d) count %d; want [%d, %d) count %d", p, i,
					g.StartNs, g.EndNs, g.Hists[p].TotalCount(), w.StartNs, w.EndNs, w.Hists[p].TotalCount())
			}
		}
		if s.Fingerprint(streamed, p) == results.HlogFingerprint(streamed, p) {
			t.Errorf("%s: the streamed log's fingerprint is the whole-run log's; want them apart", p)
		}
	}
}
