package loadgen

import (
	"sync"
	"time"
)

// AskSpan is how long a delivery must have waited on the lock, while the
// lock was forgotten and its caught holder kept inside, for a designed
// strike to count as landed when no answer came in that time: 250ms, longer
// than any retry pause of AcquireRetry (strategies.DefaultRetryCap, 50ms)
// and than node-redlock's own retry delay (200ms).
const AskSpan = 250 * time.Millisecond

// askBoard follows, for a run's designed strikes, whether another delivery
// asked for the caught holder's lock while it was forgotten and the holder
// was inside; a strike no contender asked in counts as missed. The workers
// report their acquires live (ask, done), or as history events judged at
// the run's end (deferred). See "Designed strikes" in the package doc.
type askBoard struct {
	deferred bool
	firstAim int64           // deferred: when the first strike was aimed (Unix ns)
	keys     map[string]bool // deferred: the keys aimed at
	past     []asking        // deferred: their acquires that ended since firstAim

	mu      sync.Mutex
	active  map[int64][]*asking // payment → its acquires in flight
	aimed   bool
	key     string   // the aimed lock
	payment int64    // the caught holder's payment
	holder  [2]int   // instance, worker of the caught holder
	stopped bool     // the holder's whole process is stopped: none of its workers asks
	caught  int64    // Unix ns: when the holder was caught (aim)
	from    int64    // Unix ns; 0 until forgot
	lastOut int64    // deferred: when the last aimed holder was let go
	seen    []asking // the aimed lock's acquires, ended since aim
}

// asking is one delivery's acquire: from start to end (Unix ns, the
// times its history line has; end 0 while in flight), and whether it ended
// with an answer from the lock (granted, or refused as held).
type asking struct {
	key      string
	payment  int64
	instance int
	worker   int32
	start    int64
	end      int64
	answered bool
	ok       bool // granted
}

func newAskBoard() *askBoard { return &askBoard{active: make(map[int64][]*asking)} }

// newDeferredAskBoard is the board of a run whose instances run in
// processes or on agents.
func newDeferredAskBoard() *askBoard { b := newAskBoard(); b.deferred = true; return b }

// record takes the acquire events among evs (drained from the instances,
// on the coordinator's clock) that ended once a strike was aimed.
func (b *askBoard) record(evs []clientEvent) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.firstAim == 0 {
		return
	}
	for i := range evs {
		ev := &evs[i]
		// Once the last strike is over, an acquire begun after it
		// matters to none.
		if ev.Kind != evAcquire || ev.Ret < b.firstAim || !b.keys[ev.Key] || !b.aimed && ev.Inv > b.lastOut {
			continue
		}
		b.past = append(b.past, asking{key: ev.Key, payment: ev.Payment, instance: int(ev.Instance), worker: ev.Worker,
			start: ev.Inv, end: ev.Ret, answered: ev.OK || ev.Err == "not_acquired", ok: ev.OK})
	}
}

// judgeDeferred reports whether the deferred strike aim, whose holder was
// let go at aim.out, landed.
func (b *askBoard) judgeDeferred(aim *strikeAim) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, a := range b.past {
		if a.key == aim.key && !aim.holds(a.instance, a.worker) && askLanded(a.start, a.end, a.answered, a.ok, aim.caught, aim.from, aim.out) {
			return true
		}
	}
	return false
}

// ask records that a worker starts acquiring key for payment, at start
// (Unix ns).
func (b *askBoard) ask(key string, payment int64, instance int, worker int32, start int64) *asking {
	a := &asking{key: key, payment: payment, instance: instance, worker: worker, start: start}
	b.mu.Lock()
	b.active[payment] = append(b.active[payment], a)
	b.mu.Unlock()
	return a
}

// done records the end of a at end (Unix ns): granted (ok), refused as
// its history line's not_acquired (answered, not ok), or neither.
func (b *askBoard) done(a *asking, ok, answered bool, end int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	a.end, a.ok, a.answered = end, ok, answered || ok
	list := b.active[a.payment]
	for i, x := range list {
		if x == a {
			list[i] = list[len(list)-1]
			list = list[:len(list)-1]
			break
		}
	}
	if len(list) == 0 {
		delete(b.active, a.payment)
	} else {
		b.active[a.payment] = list
	}
	if b.aimed && a.key == b.key {
		b.seen = append(b.seen, *a)
	}
}

// otherAsking reports whether a delivery of payment other than the one of
// instance's worker is acquiring its lock now.
func (b *askBoard) otherAsking(payment int64, instance int, worker int32) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, a := range b.active[payment] {
		if a.instance != instance || a.worker != worker {
			return true
		}
	}
	return false
}

// aim starts following key, whose holder (instance, worker, with
// payment) was caught.
func (b *askBoard) aim(key string, payment int64, instance int, worker int32) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.aimed, b.key, b.payment, b.holder, b.from, b.seen = true, key, payment, [2]int{instance, int(worker)}, 0, b.seen[:0]
	b.stopped, b.caught = false, time.Now().UnixNano()
	if b.firstAim == 0 {
		b.firstAim = time.Now().UnixNano()
	}
	if b.deferred {
		if b.keys == nil {
			b.keys = map[string]bool{}
		}
		b.keys[key] = true
	}
}

// holderStopped says the aimed holder's whole process is stopped: its
// other workers cannot ask either.
func (b *askBoard) holderStopped() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.aimed {
		b.stopped = true
	}
}

// forgot marks when the lock was forgotten (at, for a lease that expires
// later than now).
func (b *askBoard) forgot(at int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.aimed && b.from == 0 {
		b.from = at
	}
}

// landed ends the aim with the holder let go at out. aim is nil when
// nothing was aimed or the fault never said when the lock was forgotten
// (not judged); landed, whether another delivery got an answer from the
// lock in [from, out], or waited on it there for AskSpan (or the whole
// window, if shorter).
func (b *askBoard) landed(out int64) (aim *strikeAim, landed bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.aimed || b.from == 0 {
		b.aimed = false
		return nil, false
	}
	b.aimed = false
	aim = &strikeAim{key: b.key, payment: b.payment, instance: b.holder[0], worker: b.holder[1], stopped: b.stopped,
		caught: b.caught, from: b.from, out: out, deferred: b.deferred}
	if b.deferred {
		b.lastOut = out
		return aim, false // judged at the run's end
	}
	for _, a := range b.seen {
		if !aim.holds(a.instance, a.worker) && askLanded(a.start, a.end, a.answered, a.ok, aim.caught, aim.from, out) {
			return aim, true
		}
	}
	for _, list := range b.active {
		for _, a := range list {
			if a.key == b.key && !aim.holds(a.instance, a.worker) && askLanded(a.start, 0, false, false, aim.caught, aim.from, out) {
				return aim, true
			}
		}
	}
	return aim, false
}

// holds reports whether the acquire of (instance, worker) is the aimed
// holder's, or, with the holder's process stopped, of its instance: those
// asked nothing while it was stopped.
func (a *strikeAim) holds(instance int, worker int32) bool {
	return instance == a.instance && (a.stopped || int(worker) == a.worker)
}

// askLanded is the rule of a landed strike for one acquire from start to
// end (Unix ns; 0: still in flight), granted (ok), refused (answered) or
// neither, with the holder caught at caught and its lock forgotten from
// from until out: it was granted in [caught, out] (the lock changed hands
// while the holder was inside), answered in [from, out], or it waited in
// [from, out] for AskSpan (or all of it, if shorter). lockbench check
// applies the same rule to the history's acquire lines.
func askLanded(start, end int64, answered, ok bool, caught, from, out int64) bool {
	if end != 0 && end <= out && ok && end >= caught {
		return true
	}
	if out <= from {
		return false
	}
	if end != 0 && end <= out && answered && end >= from {
		return true
	}
	if end == 0 || end > out {
		end = out
	}
	start = max(start, from)
	return end-start >= min(int64(AskSpan), out-from)
}

// asksDrainer drains the instances' events into a deferred askBoard every
// historyEvery, for a run that keeps no history file (which does so
// itself: historyWriter.tap).
type asksDrainer struct {
	mu    sync.Mutex
	insts []historian
	b     *askBoard
	evs   []clientEvent
	quit  chan struct{}
	done  chan struct{}
	once  sync.Once
}

// drainAsks starts draining insts into b.
func drainAsks(insts []instance, b *askBoard) *asksDrainer {
	d := &asksDrainer{b: b, quit: make(chan struct{}), done: make(chan struct{})}
	for _, in := range insts {
		if h, ok := in.(historian); ok {
			d.insts = append(d.insts, h)
		}
	}
	go func() {
		defer close(d.done)
		t := time.NewTicker(historyEvery)
		defer t.Stop()
		for {
			select {
			case <-d.quit:
				return
			case <-t.C:
				d.drainNow()
			}
		}
	}()
	return d
}

// drainNow drains what the instances reported since the last drain (nil:
// nothing to drain).
func (d *asksDrainer) drainNow() {
	if d == nil {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, in := range d.insts {
		d.evs = in.DrainHistory(d.evs[:0])
		d.b.record(d.evs)
	}
}

// stop ends the drains.
func (d *asksDrainer) stop() {
	d.once.Do(func() { close(d.quit) })
	<-d.done
}
