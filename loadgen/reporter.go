package loadgen

import (
	"sync"

	"github.com/lockbench/lockbench/results"
)

// A Reporter hears a run as it goes, by one path: each measured interval
// as it closes, and the run's events, its history among them. The calls
// come one at a time, off the workers' path, and should return quickly.
type Reporter interface {
	// Interval takes each measured interval as it closes (warmup
	// intervals are dropped). It must not
	// keep or change the histograms. Its first error is Run's, after the
	// run, which goes on.
	Interval(results.Interval) error
	// Event takes everything else the run says, in order.
	Event(Event)
}

// EventKind says what an Event reports.
type EventKind int

const (
	// EventProgress: the run so far (Event.Progress), about once per
	// latency interval, and once more when the run has drained.
	EventProgress EventKind = iota + 1
	// EventFallback says, once and before the load, that the run asked
	// for the sequenced store and runs sync; Event.Why says what stands in
	// the way ("the store is postgres, not memory").
	EventFallback
	// EventSequenced carries what the sequenced store did (Event.Seq),
	// once a run that used it has applied everything.
	EventSequenced
	// EventLoadStart comes just before the first payment is dispatched,
	// EventLoadEnd once the instances have drained and the last interval
	// is collected: between them is the load itself, without the set-up,
	// the teardown or the judging (BenchmarkHarnessCeiling measures its
	// CPU).
	EventLoadStart
	EventLoadEnd
	// EventHistoryStart opens a run's history (Options.History): its
	// header (Event.Header), before any of its lines.
	EventHistoryStart
	// EventHistory carries the history's lines recorded since the last
	// (Event.History), about every 250 ms.
	EventHistory
	// EventHistoryEnd carries the history's last lines, its end line
	// among them, once the run is judged. A run that fails may end
	// without it.
	EventHistoryEnd
)

// Event is one thing a run reports other than an interval.
type Event struct {
	Kind   EventKind
	Why    string         // EventFallback
	Seq    SeqStats       // EventSequenced
	Header *HistoryHeader // EventHistoryStart
	// History is JSON lines (docs/history.md) of EventHistory and
	// EventHistoryEnd, valid during the call only.
	History  []byte
	progress *lazyProgress
}

// ProgressEvent is an EventProgress carrying p.
func ProgressEvent(p Progress) Event {
	l := &lazyProgress{p: p}
	l.once.Do(func() {})
	return Event{Kind: EventProgress, progress: l}
}

// Progress is an EventProgress's run so far; the zero Progress for other
// events. It is worked out when first asked for (it reads the store's
// counts), so a Reporter that never asks costs the run nothing; ask during
// Event.
func (e Event) Progress() Progress {
	if e.progress == nil {
		return Progress{}
	}
	e.progress.once.Do(func() { e.progress.p = e.progress.f() })
	return e.progress.p
}

type lazyProgress struct {
	once sync.Once
	f    func() Progress
	p    Progress
}

// Events is a Reporter of events alone: intervals are dropped.
type Events func(Event)

func (f Events) Interval(results.Interval) error { return nil }
func (f Events) Event(e Event)                   { f(e) }

// Intervals is a Reporter of intervals alone, such as
// results.HlogStream.Write: events are dropped.
type Intervals func(results.Interval) error

func (f Intervals) Interval(iv results.Interval) error { return f(iv) }
func (f Intervals) Event(Event)                        {}

// Tee is a Reporter that tells each of rs in order, skipping nil ones.
// Every one hears each interval; the first error is returned.
func Tee(rs ...Reporter) Reporter {
	var t tee
	for _, r := range rs {
		if r != nil {
			t = append(t, r)
		}
	}
	if len(t) == 1 {
		return t[0]
	}
	return t
}

type tee []Reporter

func (t tee) Interval(iv results.Interval) error {
	var first error
	for _, r := range t {
		if err := r.Interval(iv); err != nil && first == nil {
			first = err
		}
	}
	return first
}

func (t tee) Event(e Event) {
	for _, r := range t {
		r.Event(e)
	}
}

// serial passes a run's calls to r one at a time: the collector, the
// history writer and the runner each call it.
type serial struct {
	mu sync.Mutex
	r  Reporter
}

func (s *serial) Interval(iv results.Interval) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.r.Interval(iv)
}

func (s *serial) Event(e Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.r.Event(e)
}

// noReporter hears nothing: a run without a Reporter.
type noReporter struct{}

func (noReporter) Interval(results.Interval) error { return nil }
func (noReporter) Event(Event)                     {}

// LoadSpan is a Reporter that calls start at EventLoadStart and the
// function start returned at EventLoadEnd: a timer, or a CPU count, over
// the load itself.
func LoadSpan(start func() (end func())) Events {
	var end func()
	return func(e Event) {
		switch e.Kind {
		case EventLoadStart:
			end = start()
		case EventLoadEnd:
			if end != nil {
				end()
			}
		}
	}
}
