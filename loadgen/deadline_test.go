package loadgen

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"testing"
	"time"
)

// waitDone returns how long ctx took to be done, failing after limit.
func waitDone(t *testing.T, ctx context.Context, limit time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	select {
	case <-ctx.Done():
		return time.Since(start)
	case <-time.After(limit):
		t.Fatalf("context not done after %v", limit)
		return 0
	}
}

// A call's context behaves as context.WithTimeout's: it has the deadline,
// is live during the call, and is cancelled when the call ends, whether
// Done was asked for before or after.
func TestCallContextEndCancels(t *testing.T) {
	d := newDeadlines(context.Background(), time.Hour, time.Now())
	defer d.close()
	for _, early := range []bool{true, false} {
		now := time.Now()
		c := d.begin(new(callCtx), at(d, now))
		if dl, ok := c.Deadline(); !ok || !dl.Equal(now.Add(time.Hour)) {
			t.Errorf("Deadline() = %v, %v; want %v, true", dl, ok, now.Add(time.Hour))
		}
		var done <-chan struct{}
		if early {
			done = c.Done()
		}
		if err := c.Err(); err != nil {
			t.Errorf("Err() during the call = %v; want nil", err)
		}
		d.end(c)
		if !early {
			done = c.Done()
		}
		select {
		case <-done:
		default:
			t.Errorf("Done (asked for early: %v) not closed after end", early)
		}
		if err := c.Err(); !errors.Is(err, context.Canceled) {
			t.Errorf("Err() after end = %v; want context.Canceled", err)
		}
	}
}

// A call that outlives its timeout is done at its deadline with
// DeadlineExceeded, also after many calls that ended in time (the timer is
// armed once and re-armed when it fires early, not per call).
// The same holds for one call context begun again call after call (a
// worker's, reusable): the timer that fired for an earlier generation
// cancels only the call under way past its own deadline.
func TestCallContextExpires(t *testing.T) {
	for _, reuse := range []bool{false, true} {
		const timeout = 50 * time.Millisecond
		d := newDeadlines(context.Background(), timeout, time.Now())
		var same callCtx
		next := func() *callCtx {
			if reuse {
				return &same
			}
			return new(callCtx)
		}
		for end := time.Now().Add(3 * timeout); time.Now().Before(end); {
			began := time.Now()
			c := d.begin(next(), at(d, began))
			d.end(c)
			// A thread descheduled past the timeout between begin and
			// end ended late, not in time.
			if err := c.Err(); !errors.Is(err, context.Canceled) && time.Since(began) < timeout {
				t.Fatalf("reuse %v: Err() of a call that ended in time = %v; want context.Canceled", reuse, err)
			}
		}
		start := time.Now()
		c := d.begin(next(), at(d, start))
		waitDone(t, c, 5*time.Second)
		if took := time.Since(start); took < timeout-time.Millisecond {
			t.Errorf("reuse %v: done after %v; want its timeout %v", reuse, took, timeout)
		}
		if err := c.Err(); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("reuse %v: Err() = %v; want context.DeadlineExceeded", reuse, err)
		}
		d.end(c)
		d.close()
	}
}

// The parent's end reaches the call under way and every call after it; a
// parent's earlier deadline is the call's.
func TestCallContextParent(t *testing.T) {
	parent, cancel := context.WithCancel(context.Background())
	d := newDeadlines(parent, time.Hour, time.Now())
	defer d.close()
	c := d.begin(new(callCtx), at(d, time.Now()))
	cancel()
	waitDone(t, c, 5*time.Second)
	if err := c.Err(); !errors.Is(err, context.Canceled) {
		t.Errorf("Err() after the parent's cancel = %v; want context.Canceled", err)
	}
	d.end(c)
	c = d.begin(new(callCtx), at(d, time.Now()))
	if err := c.Err(); !errors.Is(err, context.Canceled) {
		t.Errorf("Err() of a call begun after the parent's cancel = %v; want context.Canceled", err)
	}
	d.end(c)

	pdl := time.Now().Add(30 * time.Millisecond)
	short, cancelShort := context.WithDeadline(context.Background(), pdl)
	defer cancelShort()
	d2 := newDeadlines(short, time.Hour, time.Now())
	defer d2.close()
	c = d2.begin(new(callCtx), at(d2, time.Now()))
	defer d2.end(c)
	if dl, _ := c.Deadline(); !dl.Equal(pdl) {
		t.Errorf("Deadline() = %v; want the parent's %v", dl, pdl)
	}
	waitDone(t, c, 5*time.Second)
	if err := c.Err(); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Err() at the parent's deadline = %v; want context.DeadlineExceeded", err)
	}

	// A parent that is never done (release's, WithoutCancel) leaves the
	// call to its own deadline.
	d3 := newDeadlines(context.WithoutCancel(parent), time.Hour, time.Now())
	defer d3.close()
	c = d3.begin(new(callCtx), at(d3, time.Now()))
	if err := c.Err(); err != nil {
		t.Errorf("Err() under a parent without cancellation = %v; want nil", err)
	}
	d3.end(c)
}

// A call's context answers Value with the run's values (the release's
// too, though its parent is the run's WithoutCancel), without allocating,
// and context.Cause with the parent's cause when the parent ended it, the
// call's own error when its deadline did.
func TestCallContextValuesAndCause(t *testing.T) {
	if cancelCtxKey == nil {
		t.Fatal("the context package's cancelCtx key was not found: every derived context walks the parent's chain")
	}
	type key struct{}
	run, cancel := context.WithCancelCause(context.WithValue(context.Background(), key{}, "run's"))
	// An hour: no deadline of the call's own may end it mid-check, however
	// long a busy machine takes over AllocsPerRun.
	cx := newCycleCtx(run, time.Hour, true)
	defer cx.acquire.close()
	defer cx.release.close()
	var calls [2]callCtx
	a := cx.acquire.begin(&calls[0], cx.clock.now())
	r := cx.release.begin(&calls[1], cx.clock.now())
	for _, c := range []*callCtx{a, r} {
		if v := c.Value(key{}); v != "run's" {
			t.Errorf("Value = %v; want the run's", v)
		}
		if n := testing.AllocsPerRun(100, func() { _ = c.Value(key{}) }); n != 0 {
			t.Errorf("Value allocates %v times a lookup; want none", n)
		}
		// What a statement's timeout does under the call: the context
		// package asks the call for its cancelCtx key.
		sctx, scancel := context.WithTimeout(c, time.Hour)
		scancel()
		if !errors.Is(sctx.Err(), context.Canceled) {
			t.Errorf("derived context after its cancel: Err() = %v", sctx.Err())
		}
	}
	stop := errors.New("the run was stopped")
	cancel(stop)
	waitDone(t, a, 5*time.Second)
	if err := context.Cause(a); err != stop {
		t.Errorf("Cause of the acquire after the run's cancel = %v; want the run's cause", err)
	}
	if err := r.Err(); err != nil {
		t.Errorf("the release after the run's cancel: Err() = %v; want nil (the parent never ends it)", err)
	}
	cx.acquire.end(a)
	cx.release.end(r)

	// A release ends at its own deadline.
	short := newCycleCtx(context.Background(), 20*time.Millisecond, true)
	defer short.acquire.close()
	defer short.release.close()
	r = short.release.begin(&calls[1], short.clock.now())
	waitDone(t, r, 5*time.Second)
	if err := context.Cause(r); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Cause of the release at its deadline = %v; want context.DeadlineExceeded", err)
	}
	short.release.end(r)
}

// Contexts derived from a call's (a strategy's statement timeout, pgx's
// watch) end with it, with its error, and register without a goroutine
// each.
func TestCallContextChildren(t *testing.T) {
	d := newDeadlines(context.Background(), time.Hour, time.Now())
	defer d.close()
	c := d.begin(new(callCtx), at(d, time.Now()))
	before := runtime.NumGoroutine()
	var children []context.Context
	for range 50 {
		child, cancel := context.WithTimeout(c, time.Hour)
		defer cancel()
		children = append(children, child)
	}
	if n := runtime.NumGoroutine(); n > before+5 {
		t.Errorf("%d goroutines after deriving 50 contexts, %d before; want no goroutine per child", n, before)
	}
	ran := make(chan struct{})
	stopped := context.AfterFunc(c, func() { t.Error("a stopped AfterFunc ran") })
	if !stopped() {
		t.Error("stop() of a pending AfterFunc = false; want true")
	}
	context.AfterFunc(c, func() { close(ran) })
	d.end(c)
	for i, child := range children {
		waitDone(t, child, 5*time.Second)
		if err := child.Err(); !errors.Is(err, context.Canceled) {
			t.Errorf("child %d: Err() = %v; want context.Canceled", i, err)
		}
	}
	select {
	case <-ran:
	case <-time.After(5 * time.Second):
		t.Error("AfterFunc did not run when the call ended")
	}

	// A child of a call that expires expires with it.
	d2 := newDeadlines(context.Background(), 20*time.Millisecond, time.Now())
	defer d2.close()
	c = d2.begin(new(callCtx), at(d2, time.Now()))
	defer d2.end(c)
	child, cancel := context.WithTimeout(c, time.Hour)
	defer cancel()
	waitDone(t, child, 5*time.Second)
	if err := child.Err(); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("child of an expired call: Err() = %v; want context.DeadlineExceeded", err)
	}
}

// Done, Err and AfterFunc from other goroutines race with the call's end,
// its expiry and the parent's cancel (run with -race).
func TestCallContextConcurrent(t *testing.T) {
	parent, cancel := context.WithCancel(context.Background())
	defer cancel()
	d := newDeadlines(parent, time.Millisecond, time.Now())
	defer d.close()
	var wg sync.WaitGroup
	for i := range 2000 {
		if i == 1500 {
			cancel()
		}
		c := d.begin(new(callCtx), at(d, time.Now()))
		wg.Go(func() {
			<-c.Done()
			if c.Err() == nil {
				t.Error("Err() = nil after Done closed")
			}
		})
		wg.Go(func() { context.AfterFunc(c, func() {}) })
		if i%7 == 0 {
			time.Sleep(time.Millisecond)
		}
		d.end(c)
	}
	wg.Wait()
}

// at is t as a reading of d's clock: nanoseconds since its epoch.
func at(d *deadlines, t time.Time) int64 { return int64(t.Sub(d.epoch)) }

// A call context that ended with nobody waiting on it is begun again for
// the next call: it is live again with the new deadline, a cancellation
// meant for its last call (the timer's, read before it was begun again)
// does not touch it, and one that anyone waited on is not reused.
func TestCallContextReuse(t *testing.T) {
	d := newDeadlines(context.Background(), time.Hour, time.Now())
	defer d.close()
	var c callCtx
	if !c.reusable() {
		t.Fatal("a callCtx never begun: not reusable")
	}
	d.begin(&c, at(d, time.Now()))
	if c.reusable() {
		t.Error("a call under way: reusable")
	}
	old := c.state.Load()
	d.end(&c)
	if !c.reusable() {
		t.Fatal("an ended call nobody waited on: not reusable")
	}
	now := time.Now().Add(time.Minute)
	d.begin(&c, at(d, now))
	if err := c.Err(); err != nil {
		t.Fatalf("Err() of the call begun again = %v; want nil", err)
	}
	if dl, _ := c.Deadline(); !dl.Equal(now.Add(time.Hour)) {
		t.Errorf("Deadline() of the call begun again = %v; want %v", dl, now.Add(time.Hour))
	}
	c.cancelGen(old, context.DeadlineExceeded)
	if err := c.Err(); err != nil {
		t.Errorf("a cancellation of the last generation reached the new call: Err() = %v", err)
	}
	d.end(&c)
	if err := c.Err(); !errors.Is(err, context.Canceled) {
		t.Errorf("Err() after the second end = %v; want context.Canceled", err)
	}

	// Asked for Done, or registered with: never reused.
	for name, use := range map[string]func(c *callCtx){
		"Done":      func(c *callCtx) { _ = c.Done() },
		"AfterFunc": func(c *callCtx) { stop := c.AfterFunc(func() {}); stop() },
	} {
		d := newDeadlines(context.Background(), time.Hour, time.Now())
		var c callCtx
		d.begin(&c, at(d, time.Now()))
		use(&c)
		d.end(&c)
		if c.reusable() {
			t.Errorf("a call whose context's %s was used: reusable", name)
		}
		d.close()
	}
}

// BenchmarkCallContext is the cost of a lock cycle's two call contexts
// (acquire, release) as a worker makes them, for a client that asks
// nothing of them, and for one that asks Done and Deadline per call as
// go-redis does (a non-blocking look at Done before it takes a connection,
// the deadline for the socket's), for one that derives a context with its
// own timeout (the Postgres strategies' statement timeout), with and
// without keepDone; context.WithTimeout's for comparison, under
// context.Background() and, as an application's calls (and the bare
// loops of compare-redis and compare-postgres, under the command's
// signal context) are, under one cancellable parent that every goroutine
// registers with.
func BenchmarkCallContext(b *testing.B) {
	cancellable, cancel := context.WithCancel(context.Background())
	defer cancel()
	asksDone := func(ctx context.Context) {
		select {
		case <-ctx.Done():
			b.Error("done during the call")
		default:
		}
		_, _ = ctx.Deadline()
	}
	// derives is a statement timeout around the call, as the Postgres
	// strategies set one (pgx then watches that context, not the call's).
	derives := func(ctx context.Context) {
		sctx, cancel := context.WithTimeout(ctx, time.Minute)
		asksDone(sctx)
		cancel()
	}
	for _, client := range []struct {
		name string
		call func(context.Context)
	}{{"asks-nothing", func(context.Context) {}}, {"asks-done", asksDone}, {"derives", derives}} {
		for _, parent := range []struct {
			name string
			ctx  context.Context
		}{{"", context.Background()}, {"cancellable-parent/", cancellable}} {
			// The client's calls under the parent itself, as the bare loops
			// make them: what the harness's call contexts add to is this.
			b.Run("direct/"+parent.name+client.name, func(b *testing.B) {
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						client.call(parent.ctx)
						client.call(parent.ctx)
					}
				})
			})
			b.Run("WithTimeout/"+parent.name+client.name, func(b *testing.B) {
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						for range 2 {
							ctx, cancel := context.WithTimeout(parent.ctx, 5*time.Second)
							client.call(ctx)
							cancel()
						}
					}
				})
			})
		}
		for _, keep := range []bool{false, true} {
			name := "deadlines/" + client.name
			if keep {
				name += "/keep-done"
			}
			b.Run(name, func(b *testing.B) {
				b.RunParallel(func(pb *testing.PB) {
					cx := newCycleCtx(context.Background(), 5*time.Second, keep)
					defer cx.acquire.close()
					defer cx.release.close()
					w := &worker{}
					for pb.Next() {
						calls := w.cycleCalls()
						c := cx.acquire.begin(&calls[0], cx.clock.now())
						client.call(c)
						cx.acquire.end(c)
						c = cx.release.begin(&calls[1], cx.clock.now())
						client.call(c)
						cx.release.end(c)
					}
				})
			})
		}
	}
}

// With keepDone, a call's end leaves Done's channel open and the next call
// of the worker's context gets the same one, live; a cancellation closes
// it (the deadline, the parent's end, a stale one excepted), and then the
// next call gets a new channel; a context derived from a call closes it
// at the end as ever.
func TestCallContextKeepDone(t *testing.T) {
	const timeout = 30 * time.Millisecond
	parent, cancelParent := context.WithCancel(context.Background())
	defer cancelParent()
	d := newDeadlines(parent, timeout, time.Now())
	d.keepDone = true
	defer d.close()
	closed := func(ch <-chan struct{}) bool {
		select {
		case <-ch:
			return true
		default:
			return false
		}
	}
	begin := func(c *callCtx) *callCtx {
		t.Helper()
		if !c.reusable() {
			t.Fatal("call context not reusable")
		}
		return d.begin(c, at(d, time.Now()))
	}

	// The first call to ask Done makes its channel the slow way, and is
	// not reused; from then on begin makes the channel.
	first := begin(new(callCtx))
	ch := first.Done()
	d.end(first)
	if !closed(ch) || first.reusable() {
		t.Fatalf("first call asked Done: closed %v, reusable %v; want true, false", closed(ch), first.reusable())
	}

	var c callCtx
	begin(&c)
	ch = c.Done()
	old := c.state.Load()
	d.end(&c)
	if closed(ch) {
		t.Error("Done closed at the end of a call with keepDone")
	}
	if err := c.Err(); !errors.Is(err, context.Canceled) {
		t.Errorf("Err() after end = %v; want context.Canceled", err)
	}
	begin(&c)
	if c.Done() != ch || c.Err() != nil {
		t.Errorf("next call: same channel %v, Err() %v; want true, nil", c.Done() == ch, c.Err())
	}
	c.cancelGen(old, context.DeadlineExceeded) // the timer's, for the last call
	if closed(ch) || c.Err() != nil {
		t.Errorf("a cancellation of the last call reached this one: closed %v, Err() %v", closed(ch), c.Err())
	}

	// This call outlives its deadline: its channel closes, and the call
	// context is not begun again (the timer cancelled it, not its end:
	// the timer's goroutine may still be at it).
	waitDone(t, &c, time.Second)
	if err := c.Err(); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Err() past the deadline = %v; want DeadlineExceeded", err)
	}
	d.end(&c)
	if c.reusable() {
		t.Error("a call context its timer cancelled: reusable")
	}
	var e callCtx
	begin(&e)
	if e.Done() == ch || closed(e.Done()) {
		t.Errorf("after an expired call: same channel %v, closed %v; want a new open one", e.Done() == ch, closed(e.Done()))
	}
	ch = e.Done()

	// A derived context registers with the call: its end closes Done.
	derived, cancelDerived := context.WithCancel(&e)
	d.end(&e)
	cancelDerived()
	if !closed(ch) || !closed(derived.Done()) || e.reusable() {
		t.Errorf("call with a derived context: Done closed %v, derived's %v, reusable %v; want true, true, false",
			closed(ch), closed(derived.Done()), e.reusable())
	}

	// The parent's end closes the kept channel of the call under way.
	var p callCtx
	begin(&p)
	d.end(&p)
	begin(&p)
	ch = p.Done()
	cancelParent()
	waitDone(t, &p, time.Second)
	if !errors.Is(p.Err(), context.Canceled) || !closed(ch) {
		t.Errorf("parent cancelled: Err() %v, closed %v", p.Err(), closed(ch))
	}
	d.end(&p)
}

// With keepDone, one worker's call context begun again call after call,
// its timer firing as calls end and begin (a 1 ms timeout, some calls
// outliving it), and the parent cancelled part way: Done is never closed
// while the call it belongs to is live (run with -race).
func TestCallContextKeepDoneConcurrent(t *testing.T) {
	parent, cancel := context.WithCancel(context.Background())
	defer cancel()
	d := newDeadlines(parent, time.Millisecond, time.Now())
	d.keepDone = true
	defer d.close()
	w := &worker{}
	for i := range 3000 {
		if i == 2500 {
			cancel()
		}
		calls := w.cycleCalls()
		c := d.begin(&calls[0], at(d, time.Now()))
		for range 3 {
			select {
			case <-c.Done():
				if c.Err() == nil {
					t.Fatalf("call %d: Done closed while Err() = nil", i)
				}
			default:
			}
			if i%5 == 0 {
				time.Sleep(300 * time.Microsecond)
			}
		}
		d.end(c)
	}
}

// With keepDone, a call whose derived contexts were all cancelled before
// it ended (a strategy's statement timeout) is quiet: its context, Done's
// channel and its extras serve the next call, and a stop left from the
// last call cannot unregister the next call's function.
func TestCallContextKeepDoneDerived(t *testing.T) {
	d := newDeadlines(context.Background(), time.Hour, time.Now())
	d.keepDone = true
	defer d.close()
	var c callCtx
	call := func() (stop func() bool, x *callExtras) {
		d.begin(&c, at(d, time.Now()))
		sctx, cancel := context.WithTimeout(&c, time.Minute)
		x = c.extras.Load()
		cancel()
		if sctx.Err() == nil {
			t.Fatal("derived context not done after its cancel")
		}
		return c.AfterFunc(func() {}), x
	}
	// The first call asks Done the slow way; the next two are the steady
	// state.
	d.begin(&c, at(d, time.Now()))
	_ = c.Done()
	d.end(&c)
	c = callCtx{}
	d.begin(&c, at(d, time.Now()))
	_ = c.Done()
	d.end(&c)

	stop, x1 := call()
	if !stop() {
		t.Fatal("stop of a live registration: false")
	}
	ch := c.Done()
	d.end(&c)
	if !c.reusable() {
		t.Fatal("a call whose derived contexts were all cancelled: not reusable")
	}
	select {
	case <-ch:
		t.Fatal("Done closed at the end of a quiet call")
	default:
	}
	ran := make(chan struct{})
	d.begin(&c, at(d, time.Now()))
	stop2 := c.AfterFunc(func() { close(ran) })
	if x2 := c.extras.Load(); x2 != x1 {
		t.Error("the quiet call's extras were not reused")
	}
	if c.Done() != ch {
		t.Error("the quiet call's Done channel was not reused")
	}
	if stop() {
		t.Error("a stop from the last call unregistered this call's function")
	}
	d.end(&c) // not quiet: the function is still registered, and runs
	select {
	case <-ran:
	case <-time.After(time.Second):
		t.Fatal("the function registered with the call did not run at its end")
	}
	if stop2() {
		t.Error("stop after the function ran: true")
	}
	select {
	case <-ch:
	default:
		t.Error("Done not closed at the end of a call with a function registered")
	}
	if c.reusable() {
		t.Error("a call that ended with a function registered: reusable")
	}
}
