package loadgen

import (
	"errors"
	"testing"

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
