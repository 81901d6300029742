package loadgen

import (
	"errors"
	"sync"
	"time"

	"github.com/lockbench/lockbench/strategies"
)

// AskSpan is how long a delivery must have waited on the lock, while the
// lock was forgotten and its caught holder kept inside, for a designed
// strike to count as landed when no answer came in that time: 250ms, longer
// than any retry pause of AcquireRetry (strategies.DefaultRetryCap, 50ms)
// and than node-redlock's own retry delay (200ms).
const AskSpan = 250 * time.Millisecond

// askBoard follows, for the designed strikes of a run whose instances run
// in this process, whether another delivery asked for the caught holder's
// lock while it was forgotten (FaultEnv.Forgot) and the holder was inside:
// a strike that every contender slept through, queued behind other
// payments or gave up on with an error proves nothing, and counts as
// missed (Summary.StrikesMissed).
//
// The workers report every acquire they start and end (ask, done); the
// board keeps those in flight, and from aim on every one of the aimed
// lock.
type askBoard struct {
	mu      sync.Mutex
	active  map[int64][]*asking // payment → its acquires in flight
	aimed   bool
	key     string   // the aimed lock
	payment int64    // the caught holder's payment
	holder  [2]int   // instance, worker of the caught holder
	from    int64    // Unix ns; 0 until forgot
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
}

func newAskBoard() *askBoard { return &askBoard{active: make(map[int64][]*asking)} }

// ask records that a worker starts acquiring key for payment, at start
// (Unix ns).
func (b *askBoard) ask(key string, payment int64, instance int, worker int32, start int64) *asking {
	a := &asking{key: key, payment: payment, instance: instance, worker: worker, start: start}
	b.mu.Lock()
	b.active[payment] = append(b.active[payment], a)
	b.mu.Unlock()
	return a
}

// done records the end of a at end (Unix ns), with the acquire's error.
func (b *askBoard) done(a *asking, err error, end int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	a.end, a.answered = end, err == nil || errors.Is(err, strategies.ErrNotAcquired)
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
	aim = &strikeAim{key: b.key, payment: b.payment, instance: b.holder[0], worker: b.holder[1], from: b.from}
	check := func(a asking) bool {
		return a.instance != b.holder[0] || int(a.worker) != b.holder[1]
	}
	for _, a := range b.seen {
		if check(a) && askLanded(a.start, a.end, a.answered, b.from, out) {
			return aim, true
		}
	}
	for _, list := range b.active {
		for _, a := range list {
			if a.key == b.key && check(*a) && askLanded(a.start, 0, false, b.from, out) {
				return aim, true
			}
		}
	}
	return aim, false
}

// askLanded is the rule of a landed strike for one acquire from start to
// end (Unix ns; 0: still in flight), answered or not, with the lock
// forgotten from from until out: it was answered in [from, out], or it
// waited there for AskSpan (or all of it, if shorter). lockbench check
// applies the same rule to the history's acquire lines.
func askLanded(start, end int64, answered bool, from, out int64) bool {
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
