package loadgen

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/lockbench/lockbench/loadgen/store"
	"github.com/lockbench/lockbench/strategies"
)

// A run's history (Options.History; docs/history.md, which is the
// format's definition): every delivery's events, the store's and the
// holders', on the coordinator's clock, as JSON lines reported to the
// run's Reporter (HistoryFile writes them, zstd-compressed). The store's
// events reach historyWriter.Record under the store's lock; the holders'
// are kept per worker (histBuf) and drained by the writer every
// historyEvery, from instance processes by their stats messages.

// HistoryVersion is the version of the history format the writer writes.
const HistoryVersion = 2

// historyEvery is how often the writer drains and reports what was
// recorded: 250 ms.
const historyEvery = 250 * time.Millisecond

// The kinds of a holder's events (clientEvent.Kind).
const (
	evAcquire uint8 = iota + 1
	evRelease
	evTx
	evMessage
	evAck
)

// clientEvent is one of a holder's events: a call with its invocation and
// its return (Inv, Ret: Unix ns on its process's clock), or a
// transaction (Inv its begin, Claim, Ret its end), or a message taken
// (Inv). Its fields are exported for gob (childMsg.History).
type clientEvent struct {
	Kind     uint8
	Instance int32
	Worker   int32
	Payment  int64
	Account  int32
	Key      string
	Inv, Ret int64
	Claim    int64
	Token    int64
	// OK: the call succeeded; for a transaction, it committed.
	OK                           bool
	Claimed, Debited, Redelivery bool
	// Conflict: a transaction's version check failed (tx).
	Conflict bool
	// Unknown: a transaction's COMMIT failed on the way; it may have
	// committed (tx).
	Unknown bool
	Err     string
}

// histBuf is one worker's events since the last drain.
type histBuf struct {
	mu  sync.Mutex
	evs []clientEvent
}

func (b *histBuf) add(ev clientEvent) {
	b.mu.Lock()
	b.evs = append(b.evs, ev)
	b.mu.Unlock()
}

// drainInto appends b's events to into and empties b.
func (b *histBuf) drainInto(into []clientEvent) []clientEvent {
	b.mu.Lock()
	into = append(into, b.evs...)
	b.evs = b.evs[:0]
	b.mu.Unlock()
	return into
}

// historian is an instance whose holders' events can be drained: times
// already on the coordinator's clock.
type historian interface {
	DrainHistory(into []clientEvent) []clientEvent
}

// DrainHistory appends the events the workers recorded since the last
// drain to into (none when the run keeps no history).
func (in *Instance) DrainHistory(into []clientEvent) []clientEvent {
	for _, w := range in.workers {
		if w.hb != nil {
			into = w.hb.drainInto(into)
		}
	}
	return into
}

// HistoryHeader is the first line of a history: the bank, and each
// instance's clock.
type HistoryHeader struct {
	Run, Strategy, Kind, Store string
	Setup                      store.Setup
	Clock                      []HistoryClock
}

// HistoryClock is one instance's clock: where it runs, its offset from
// the coordinator's and the offset's uncertainty.
type HistoryClock struct {
	Instance      int
	Where         string
	OffsetNs      int64
	UncertaintyNs int64
}

// historyWriter records one run's history and reports it (EventHistory)
// every historyEvery as JSON lines; a HistoryFile writes them.
type historyWriter struct {
	rep Reporter

	mu    sync.Mutex // the encoder and out
	out   []byte     // the lines since the last flush
	insts []historian
	evs   []clientEvent

	// flushMu keeps the flushes, and so the chunks reported, in order.
	flushMu sync.Mutex
	chunk   []byte

	lanes [store.Lanes]histLane
	// st is the store recording into it, told to stop at the end.
	st store.Historian
	// tap, when set before start, also gets the holders' events as they
	// are drained (a deferred askBoard).
	tap func([]clientEvent)

	stop chan struct{}
	done chan struct{}
}

// histLane is one lane of the store's events (store.Recorder).
type histLane struct {
	mu  sync.Mutex
	evs []store.Event
	_   [64 - 8 - 24]byte
}

// newHistoryWriter reports h (EventHistoryStart) to rep.
func newHistoryWriter(rep Reporter, h HistoryHeader) *historyWriter {
	rep.Event(Event{Kind: EventHistoryStart, Header: &h})
	return &historyWriter{rep: rep, stop: make(chan struct{}), done: make(chan struct{})}
}

// start drains insts' events every historyEvery until close.
func (w *historyWriter) start(insts []historian) {
	w.insts = insts
	go func() {
		defer close(w.done)
		t := time.NewTicker(historyEvery)
		defer t.Stop()
		for {
			select {
			case <-w.stop:
				return
			case <-t.C:
				w.flush()
			}
		}
	}()
}

// Record keeps a store event (store.Recorder).
func (w *historyWriter) Record(lane int, ev *store.Event) {
	l := &w.lanes[lane%store.Lanes]
	l.mu.Lock()
	l.evs = append(l.evs, *ev)
	l.mu.Unlock()
}

// flush reports what the store and the instances recorded since the
// last (EventHistory, or kind).
func (w *historyWriter) flush() { w.flushAs(EventHistory, 0) }

// flushAs reports as kind; EventHistoryEnd's lines end with the end line
// (payments).
func (w *historyWriter) flushAs(kind EventKind, payments int64) {
	w.flushMu.Lock()
	defer w.flushMu.Unlock()
	w.mu.Lock()
	var evs []store.Event
	for i := range w.lanes {
		l := &w.lanes[i]
		l.mu.Lock()
		evs, l.evs = l.evs, evs[:0]
		l.mu.Unlock()
		for j := range evs {
			w.storeLine(&evs[j])
		}
	}
	for _, in := range w.insts {
		w.evs = in.DrainHistory(w.evs[:0])
		if w.tap != nil {
			w.tap(w.evs)
		}
		for i := range w.evs {
			w.clientLine(&w.evs[i])
		}
	}
	if kind == EventHistoryEnd {
		b := append(w.out, `{"ev":"end","payments":`...)
		b = strconv.AppendInt(b, payments, 10)
		b = appendField(b, "at", time.Now().UnixNano())
		w.write(append(b, "}\n"...))
	}
	w.chunk, w.out = w.out, w.chunk[:0]
	w.mu.Unlock()
	if len(w.chunk) > 0 || kind != EventHistory {
		w.rep.Event(Event{Kind: kind, History: w.chunk})
	}
}

// offered writes an offer line for each of ps.
func (w *historyWriter) offered(ps []Payment) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, p := range ps {
		b := append(w.out, `{"ev":"offer","p":`...)
		b = strconv.AppendInt(b, p.ID, 10)
		b = appendField(b, "a", int64(p.Account))
		b = appendField(b, "amount", p.Amount)
		w.write(append(b, "}\n"...))
	}
}

// strike writes a strike line: strike n, what it did, from start to end
// (Unix ns), its window closed at closed.
func (w *historyWriter) strike(n int64, fault, target string, start, end, closed int64, aim *strikeAim, missed bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	b := append(w.out, `{"ev":"strike","n":`...)
	b = strconv.AppendInt(b, n, 10)
	b = appendStr(b, "fault", fault)
	b = appendStr(b, "target", target)
	b = appendField(b, "start", start)
	b = appendField(b, "end", end)
	b = appendField(b, "close", closed)
	if aim != nil {
		b = appendStr(b, "k", aim.key)
		b = appendField(b, "p", aim.payment)
		b = appendField(b, "i", int64(aim.instance))
		b = appendField(b, "w", int64(aim.worker))
		b = appendField(b, "caught", aim.caught)
		b = appendField(b, "forgot", aim.from)
		if aim.stopped {
			b = append(b, `,"stopped":true`...)
		}
	}
	if missed {
		b = append(b, `,"missed":true`...)
	}
	w.write(append(b, "}\n"...))
}

// end reports what is left and the end line (payments: what the run
// counts as offered) as EventHistoryEnd.
func (w *historyWriter) end(payments int64) {
	w.detach()
	w.flushAs(EventHistoryEnd, payments)
}

// detach stops the store's recording and the drains.
func (w *historyWriter) detach() {
	if w.st != nil {
		w.st.SetRecorder(nil)
	}
	close(w.stop)
	<-w.done
}

// offers into the history.
type historyOfferer struct {
	store.Offerer
	w *historyWriter
}

// offerRecorder is told of the payments a batch offers (batch.fill).
type offerRecorder interface{ offered(ps []Payment) }

func (o historyOfferer) offered(ps []Payment) { o.w.offered(ps) }

var _ offerRecorder = historyOfferer{}

// historyClock is instance in's clock for the header.
func historyClock(id int, in instance) HistoryClock {
	c := HistoryClock{Instance: id, Where: "coordinator"}
	if r, ok := in.(*remoteInstance); ok {
		c.Where, c.OffsetNs = "process", r.offset
		if u, ok := r.proc.(interface{ ClockUncertaintyNs() int64 }); ok {
			c.Where, c.UncertaintyNs = "agent "+r.proc.Process(), u.ClockUncertaintyNs()
		}
	}
	return c
}

// errEnded is a call's class in the history when the run ended during it.
const errEnded = "ended"

// acquireErr is a failed acquire's class in the history, as gaveUp
// counts it.
func acquireErr(cx cycleCtx, actx context.Context, err error) string {
	switch {
	case cx.run.Err() != nil, errors.Is(err, strategies.ErrInterrupted):
		return errEnded
	case errors.Is(err, strategies.ErrAdapterLost):
		return ErrClassAdapterLost
	case errors.Is(err, strategies.ErrNotAcquired), actx.Err() != nil && !errors.Is(err, strategies.ErrUnavailable):
		return "not_acquired"
	}
	return errClasses[classify(err)]
}

// releaseErr is a failed release's class in the history: not_owner when
// the lock was no longer the holder's.
func releaseErr(err error) string {
	if errors.Is(err, strategies.ErrInterrupted) {
		return errEnded
	}
	if c := classify(err); c != ecLostLock {
		return errClasses[c]
	}
	return "not_owner"
}

// startHistory starts recording the run's history (Options.History): the
// store's events, the holders' in insts, reported to rep. nil when the run
// keeps none.
func startHistory(o Options, rep Reporter, info strategies.Info, setup store.Setup, insts []instance, tap func([]clientEvent)) *historyWriter {
	if !o.History {
		return nil
	}
	h := HistoryHeader{Strategy: info.Name,
		Kind: "lock", Store: string(o.Scenario.Store), Setup: setup}
	// The header's fencing is the run's, as its file name and summary row
	// say: the store's check on a strategy that issues tokens (version 2;
	// version 1 wrote the store's setting, true for tokenless ones too).
	h.Setup.Fencing = setup.Fencing && info.Fencing
	switch {
	case info.Transactional:
		h.Kind = "transaction"
	case info.Redelivers:
		h.Kind = "queue"
	}
	var hs []historian
	for i, in := range insts {
		h.Clock = append(h.Clock, historyClock(i, in))
		if x, ok := in.(historian); ok {
			hs = append(hs, x)
		}
	}
	w := newHistoryWriter(rep, h)
	if r, ok := o.Store.(store.Historian); ok {
		r.SetRecorder(w)
		w.st = r
	}
	w.tap = tap
	w.start(hs)
	return w
}

// faultName is f's name, "" for none.
func faultName(f Fault) string {
	if f == nil {
		return ""
	}
	return f.Name()
}
