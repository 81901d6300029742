package loadgen

import (
	"context"
	"sync"
	"time"

	"github.com/lockbench/lockbench/loadgen/store"
)

// MinStrikeGrace is the shortest time after a strike's end during which an
// unsafe outcome is still held against it: 1 second. The grace is the
// longer of the TTL and this: a paused holder writes as soon as it
// resumes, at the strike's end, and a lock a node forgot is taken by a
// contender up to a TTL later.
const MinStrikeGrace = time.Second

// strikeReadTimeout bounds one read of the store's counts for a strike:
// 5 seconds.
const strikeReadTimeout = 5 * time.Second

// unsafeCount is the store's count of unsafe outcomes: Summary.Unsafe is
// whether it is above zero.
func unsafeCount(c store.Counts) int64 {
	return c.Duplicates + c.Lost + c.Overdrafts + c.LostUpdates + c.StaleAccepted
}

// strikeLog counts a run's strikes (FaultEnv.Begin) and judges each. A
// strike is unsafe when the store's unsafe count rose over its window:
// from its Begin to the grace after its End, cut short by the next
// strike's Begin or by the end of the run (the final counts), whichever
// comes first. The windows never overlap, so one unsafe outcome is held
// against one strike at most; an outcome between windows (after a grace,
// before the next strike) is held against none.
type strikeLog struct {
	mu    sync.Mutex
	st    store.Store // nil: strikes are counted, not judged
	grace time.Duration

	strikes, unsafe, missed int64
	// deferred are the strikes, not unsafe, to judge at the run's end
	// (finish's landed).
	deferred []*strikeAim
	open     bool  // the last strike's window is still open
	before   int64 // the unsafe count at its Begin
	beforeOK bool  // that count could be read
	ended    bool  // it has ended: its grace timer is running
	gen      int   // the strike the grace timer belongs to
	timer    *time.Timer
	closed   bool // the run is over: the log is final

	// hist, when set, gets each strike's line as its window closes;
	// fault names the fault, cur is the strike whose window is open.
	hist  *historyWriter
	fault string
	cur   struct {
		target     string
		start, end int64
		// missed: the strike's aim (askBoard) was judged and missed;
		// aim, what it aimed at (nil when not judged).
		missed bool
		aim    *strikeAim
	}
}

// strikeAim is what a designed strike aimed at, for the history: the
// caught holder's payment, instance and worker, and when the lock was
// forgotten (Unix ns).
type strikeAim struct {
	key              string
	payment          int64
	instance, worker int
	stopped          bool // the holder's process was stopped whole
	caught           int64
	from, out        int64
	// deferred: judged at the run's end (askBoard.judgeDeferred).
	deferred bool
}

// history makes the log write each strike into the run's history.
func (l *strikeLog) history(w *historyWriter, fault string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.hist, l.fault = w, fault
}

// watch makes the log judge strikes by st's counts, with the given grace.
func (l *strikeLog) watch(st store.Store, grace time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.st, l.grace = st, grace
}

// read is the store's unsafe count now. It is called without l.mu held:
// a read of the Postgres store is a query. (Begin runs inside a holder's
// Enter for the faults that catch one; the memory store's count is cheap.)
func (l *strikeLog) read() (int64, bool) {
	l.mu.Lock()
	st := l.st
	l.mu.Unlock()
	if st == nil {
		return 0, false
	}
	ctx, cancel := context.WithTimeout(context.Background(), strikeReadTimeout)
	defer cancel()
	c, err := st.Counts(ctx)
	return unsafeCount(c), err == nil
}

// begin counts a strike (what it does), closing the window of the one
// before.
func (l *strikeLog) begin(what string) {
	u, ok := l.read()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return
	}
	if l.open {
		l.judge(u, ok)
	}
	l.strikes++
	l.gen++
	l.open, l.ended, l.before, l.beforeOK = true, false, u, ok
	l.cur.target, l.cur.start, l.cur.end = what, time.Now().UnixNano(), 0
	l.cur.missed, l.cur.aim = false, nil
}

// end starts the current strike's grace at at (Unix ns); its window
// closes when the grace is over (or earlier: begin, finish). missed says
// the strike's aim was judged missed (aim, what it was).
func (l *strikeLog) end(at int64, missed bool, aim *strikeAim) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.open || l.ended || l.closed {
		return
	}
	l.ended = true
	l.cur.missed, l.cur.aim = missed, aim
	l.cur.end = at
	gen := l.gen
	l.timer = time.AfterFunc(l.grace, func() {
		u, ok := l.read()
		l.mu.Lock()
		defer l.mu.Unlock()
		// The window may have closed meanwhile (a new strike, the run's
		// end); then this read belongs to nobody.
		if !l.closed && l.open && l.gen == gen {
			l.judge(u, ok)
		}
	})
}

// judge closes the open window with the unsafe count u at its end.
func (l *strikeLog) judge(u int64, ok bool) {
	unsafe := ok && l.beforeOK && u > l.before
	// An unsafe outcome in the window shows the strike landed.
	missed := l.cur.missed && !unsafe
	if a := l.cur.aim; a != nil && a.deferred && !unsafe {
		l.deferred = append(l.deferred, a)
	}
	if unsafe {
		l.unsafe++
	}
	if missed {
		l.missed++
	}
	l.open = false
	if l.hist != nil {
		now := time.Now().UnixNano()
		end := l.cur.end
		if end == 0 {
			end = now // cut short before it was undone
		}
		l.hist.strike(l.strikes, l.fault, l.cur.target, l.cur.start, end, now, l.cur.aim, missed)
	}
}

// finish closes the log with the run's final counts and returns the
// strikes, the unsafe ones and the missed ones; landed judges the deferred
// strikes (nil: none are).
func (l *strikeLog) finish(final store.Counts, landed func(*strikeAim) bool) (strikes, unsafe, missed int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.closed {
		l.closed = true
		if l.timer != nil {
			l.timer.Stop()
		}
		if l.open {
			l.judge(unsafeCount(final), true)
		}
		for _, a := range l.deferred {
			if landed != nil && !landed(a) {
				l.missed++
			}
		}
	}
	return l.strikes, l.unsafe, l.missed
}

// lastMissed reports whether the last strike ended judged missed (its
// window may still be open: an unsafe outcome in its grace would yet
// show it landed).
func (l *strikeLog) lastMissed() bool {
	u, ok := l.read()
	l.mu.Lock()
	defer l.mu.Unlock()
	if ok && l.beforeOK && u > l.before {
		return false // it landed: an unsafe outcome since its Begin
	}
	return l.ended && l.cur.missed
}
