package loadgen

import (
	"errors"
	"testing"
	"time"

	"github.com/lockbench/lockbench/strategies"
)

// A designed strike lands when another delivery got an answer from the lock
// while it was forgotten and the holder inside, or waited on it there for
// AskSpan; the holder's own acquires, errors, and asks outside the window
// do not count.
func TestAskBoardLanded(t *testing.T) {
	const key = "lockbench:acct:1"
	ms := func(n int) int64 { return int64(n) * int64(time.Millisecond) }
	ended := func(b *askBoard, a *asking, start, end int64, err error) {
		a.start = start
		b.done(a, err == nil, errors.Is(err, strategies.ErrNotAcquired), end)
	}
	t0 := time.Now().UnixNano()
	for _, c := range []struct {
		name string
		run  func(b *askBoard)
		want bool
	}{
		{"granted in the window", func(b *askBoard) {
			ended(b, b.ask(key, 5, 1, 0, 0), t0+ms(50), t0+ms(120), nil)
		}, true},
		{"refused in the window", func(b *askBoard) {
			ended(b, b.ask(key, 5, 1, 0, 0), t0+ms(50), t0+ms(120), strategies.ErrNotAcquired)
		}, true},
		{"an error in the window", func(b *askBoard) {
			ended(b, b.ask(key, 5, 1, 0, 0), t0+ms(50), t0+ms(120), errors.Join(strategies.ErrUnavailable))
		}, false},
		{"another lock's answer", func(b *askBoard) {
			ended(b, b.ask("lockbench:acct:2", 5, 1, 0, 0), t0+ms(50), t0+ms(120), nil)
		}, false},
		{"the holder's own", func(b *askBoard) {
			ended(b, b.ask(key, 6, 0, 3, 0), t0+ms(50), t0+ms(120), nil)
		}, false},
		{"still waiting at the end, for AskSpan", func(b *askBoard) {
			b.ask(key, 5, 1, 0, 0).start = t0 - ms(1000)
		}, true},
		{"still waiting, asked too late", func(b *askBoard) {
			b.ask(key, 5, 1, 0, 0).start = t0 + ms(400)
		}, false},
		{"granted after the catch, before forgot", func(b *askBoard) {
			ended(b, b.ask(key, 5, 1, 0, 0), t0-ms(100), t0-ms(1), nil)
		}, true},
		{"refused after the catch, before forgot", func(b *askBoard) {
			ended(b, b.ask(key, 5, 1, 0, 0), t0-ms(100), t0-ms(1), strategies.ErrNotAcquired)
		}, false},
		{"another worker of the holder's instance, not stopped", func(b *askBoard) {
			ended(b, b.ask(key, 5, 0, 1, 0), t0+ms(50), t0+ms(120), nil)
		}, true},
		{"another worker of the holder's stopped instance", func(b *askBoard) {
			b.holderStopped()
			b.ask(key, 5, 0, 1, 0).start = t0 - ms(1000)
		}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := newAskBoard()
			b.aim(key, 5, 0, 3)
			b.caught = t0 - ms(50)
			b.forgot(t0)
			c.run(b)
			aim, landed := b.landed(t0 + ms(500))
			if aim == nil || aim.payment != 5 || aim.instance != 0 || aim.worker != 3 {
				t.Fatalf("aim %+v; want payment 5 of instance 0's worker 3", aim)
			}
			if landed != c.want {
				t.Fatalf("landed %v; want %v", landed, c.want)
			}
		})
	}
	b := newAskBoard()
	b.aim(key, 5, 0, 3)
	if aim, _ := b.landed(t0); aim != nil {
		t.Fatalf("a strike whose fault never said the lock was forgotten: aim %+v; want not judged", aim)
	}
}

// A deferred board (instances in processes) judges a strike at the run's
// end from the acquire events reported: of the aimed key, by another
// holder, by the same rule.
func TestAskBoardDeferred(t *testing.T) {
	const key = "lockbench:acct:1"
	b := newDeferredAskBoard()
	b.aim(key, 5, 0, 3)
	from := time.Now().UnixNano()
	b.forgot(from)
	ms := func(n int) int64 { return from + int64(n)*int64(time.Millisecond) }
	aim, landed := b.landed(ms(500))
	if aim == nil || !aim.deferred || landed {
		t.Fatalf("landed at the strike's end: aim %+v, landed %v; want a deferred aim, judged later", aim, landed)
	}
	b.record([]clientEvent{
		{Kind: evAcquire, Key: key, Instance: 0, Worker: 3, Inv: ms(10), Ret: ms(20), OK: true},                // the holder's own
		{Kind: evAcquire, Key: "lockbench:acct:2", Instance: 1, Worker: 0, Inv: ms(10), Ret: ms(20), OK: true}, // another key
		{Kind: evAcquire, Key: key, Instance: 1, Worker: 0, Inv: ms(10), Ret: ms(20), Err: "unavailable"},      // no answer
		{Kind: evRelease, Key: key, Instance: 1, Worker: 0, Inv: ms(30), Ret: ms(40), OK: true},                // not an acquire
	})
	if b.judgeDeferred(aim) {
		t.Fatal("landed on the holder's own acquire, another key's, an error or a release; want missed")
	}
	b.record([]clientEvent{{Kind: evAcquire, Key: key, Instance: 1, Worker: 0, Inv: ms(100), Ret: ms(200), Err: "not_acquired"}})
	if !b.judgeDeferred(aim) {
		t.Fatal("another holder refused in the window: missed; want landed")
	}
}
