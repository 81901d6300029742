package loadgen

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/lockbench/lockbench/results"
)

// Tee tells every Reporter each interval and event in order, skipping nil
// ones, and returns the first error; an event's progress is worked out
// once however many ask.
func TestTee(t *testing.T) {
	var heard []string
	errA, errB := errors.New("a"), errors.New("b")
	rep := func(name string, err error) Reporter {
		return tee{Intervals(func(results.Interval) error {
			heard = append(heard, name+" interval")
			return err
		}), Events(func(e Event) {
			heard = append(heard, name+" event")
			if e.Kind == EventProgress && e.Progress().Offered != 7 {
				t.Errorf("%s: progress %+v; want Offered 7", name, e.Progress())
			}
		})}
	}
	r := Tee(nil, rep("a", errA), nil, rep("b", errB))
	if err := r.Interval(results.Interval{}); err != errA {
		t.Errorf("Interval: %v; want the first error, a", err)
	}
	calls := 0
	r.Event(Event{Kind: EventProgress, progress: &lazyProgress{f: func() Progress { calls++; return Progress{Offered: 7} }}})
	want := []string{"a interval", "b interval", "a event", "b event"}
	if len(heard) != len(want) {
		t.Fatalf("heard %q; want %q", heard, want)
	}
	for i := range want {
		if heard[i] != want[i] {
			t.Fatalf("heard %q; want %q", heard, want)
		}
	}
	if calls != 1 {
		t.Errorf("progress worked out %d times; want once", calls)
	}
	if p := (Event{Kind: EventLoadStart}).Progress(); p != (Progress{}) {
		t.Errorf("a load start's progress: %+v; want none", p)
	}
	if Tee(nil, nil) == nil {
		t.Error("Tee of nothing is nil; want a Reporter that hears nothing")
	}
}

// LoadSpan starts its span at the load's start and ends it at its end.
func TestLoadSpan(t *testing.T) {
	var got []string
	r := LoadSpan(func() func() {
		got = append(got, "start")
		return func() { got = append(got, "end") }
	})
	r.Event(Event{Kind: EventProgress})
	r.Event(Event{Kind: EventLoadStart})
	r.Event(Event{Kind: EventFallback})
	r.Event(Event{Kind: EventLoadEnd})
	if len(got) != 2 || got[0] != "start" || got[1] != "end" {
		t.Errorf("span %q; want [start end]", got)
	}
}

// A run's history leaves it through the Reporter alone, as the other
// events do: a start with the header, lines, then an end with the end
// line, in the order of the file's lines; the Reporter's calls never
// overlap, though the collector, the history and the runner all make
// them. Goroutine and process instances both.
func TestHistoryThroughReporter(t *testing.T) {
	for _, mode := range []InstanceMode{InstanceGoroutine, InstanceProcess} {
		t.Run(string(mode), func(t *testing.T) {
			o, sc := quick("nolock", func(s *Scenario) {
				s.Payments, s.Rate, s.InstanceMode, s.Interval = 0, 3000, mode, 50*time.Millisecond
				s.Duration = 800 * time.Millisecond
			})
			var (
				inside  atomic.Int32
				overlap atomic.Bool
				kinds   []EventKind
				lines   bytes.Buffer
				header  *HistoryHeader
			)
			enter := func() func() {
				if inside.Add(1) > 1 {
					overlap.Store(true)
				}
				time.Sleep(100 * time.Microsecond) // room for another call to overlap
				return func() { inside.Add(-1) }
			}
			o.History = true
			o.Reporter = tee{Intervals(func(results.Interval) error { defer enter()(); return nil }), Events(func(e Event) {
				defer enter()()
				switch e.Kind {
				case EventHistoryStart:
					header = e.Header
				case EventHistory, EventHistoryEnd:
					lines.Write(e.History)
				case EventProgress:
					_ = e.Progress()
				default:
					return
				}
				kinds = append(kinds, e.Kind)
			})}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			r, err := Run(ctx, o)
			if err != nil {
				t.Fatal(err)
			}
			if overlap.Load() {
				t.Error("two of the Reporter's calls overlapped; want one at a time")
			}
			var hist []EventKind
			for _, k := range kinds {
				if k != EventProgress {
					hist = append(hist, k)
				}
			}
			if len(hist) < 3 || hist[0] != EventHistoryStart || hist[len(hist)-1] != EventHistoryEnd {
				t.Fatalf("history events %v; want a start, lines, and an end last", hist)
			}
			if header == nil || header.Strategy != "nolock" || len(header.Clock) != sc.Instances {
				t.Errorf("header %+v; want nolock's, with %d clocks", header, sc.Instances)
			}
			var offers, finishes, payments int64
			var last string
			for _, l := range strings.Split(strings.TrimSuffix(lines.String(), "\n"), "\n") {
				var ev struct {
					Ev       string
					Payments int64
				}
				if err := json.Unmarshal([]byte(l), &ev); err != nil {
					t.Fatalf("line %q: %v", l, err)
				}
				switch ev.Ev {
				case "offer":
					offers++
				case "finish":
					finishes++
				}
				last, payments = ev.Ev, ev.Payments
			}
			// The store hears of payments a batch ahead (docs/history.md):
			// the end line says how many the run offered.
			s := r.Summary
			if last != "end" || payments != s.Payments || offers < s.Payments || finishes == 0 {
				t.Errorf("lines: %d offers, %d finishes, last %q (payments %d); want at least the run's %d payments offered, finishes, and the end line last, saying %[5]d", offers, finishes, last, payments, s.Payments)
			}
		})
	}
}

// A HistoryFile is in its path once the run ends the history, and not at
// all when the run failed before it did: neither the file nor its .part.
func TestHistoryFile(t *testing.T) {
	dir := t.TempDir()
	done := filepath.Join(dir, "h", "done"+results.HistoryExt)
	failed := filepath.Join(dir, "h", "failed"+results.HistoryExt)
	for _, path := range []string{done, failed} {
		hf, err := NewHistoryFile(path)
		if err != nil {
			t.Fatal(err)
		}
		hf.Event(Event{Kind: EventHistoryStart, Header: &HistoryHeader{Strategy: "s"}})
		hf.Event(Event{Kind: EventHistory, History: []byte("{\"ev\":\"offer\"}\n")})
		if path == done {
			hf.Event(Event{Kind: EventHistoryEnd, History: []byte("{\"ev\":\"end\"}\n")})
		}
		if err := hf.Close(); err != nil {
			t.Fatal(err)
		}
	}
	ents, err := os.ReadDir(filepath.Join(dir, "h"))
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 1 || ents[0].Name() != "done"+results.HistoryExt {
		t.Fatalf("files %v; want the ended history alone", ents)
	}
	f, err := os.Open(done)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := zstd.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	want := `"run":"done","strategy":"s"`
	if lines := strings.Split(string(b), "\n"); len(lines) != 4 || !strings.Contains(lines[0], want) || lines[2] != `{"ev":"end"}` {
		t.Errorf("history %q; want the header naming the run (%s), the offer, the end", b, want)
	}
}
