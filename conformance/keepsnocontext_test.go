package conformance

import (
	"context"
	"testing"
	"time"
)

// The tracking context sees what a call leaves registered with it: a
// derived context cancelled before the call returns is undone, one left
// running is still live, context.AfterFunc's functions likewise; and a
// registered function runs once the parent is done, as with the context
// package's own contexts.
func TestTrackingContext(t *testing.T) {
	parent, cancel := context.WithCancel(context.Background())
	c := newTrackingCtx(parent)
	defer c.close()

	// A call that cancels what it derived, as pg-onconflict's statement
	// timeouts are.
	d, dcancel := context.WithTimeout(c, time.Hour)
	stop := context.AfterFunc(c, func() {})
	dcancel()
	stop()
	if live, total := c.counts(); live != 0 || total != 2 {
		t.Errorf("after the derived context was cancelled and the function stopped: %d live of %d; want 0 of 2", live, total)
	}
	// A call that leaves a derived context running: caught.
	left, leftCancel := context.WithCancel(c)
	defer leftCancel()
	ran := make(chan struct{})
	context.AfterFunc(c, func() { close(ran) })
	if live, _ := c.counts(); live != 2 {
		t.Errorf("with a derived context and a function left registered: %d live; want 2", live)
	}
	// The parent's end reaches them.
	cancel()
	select {
	case <-left.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the derived context left registered was not cancelled with the parent")
	}
	select {
	case <-ran:
	case <-time.After(5 * time.Second):
		t.Fatal("the function left registered did not run when the parent was done")
	}
	if live, _ := c.counts(); live != 0 {
		t.Errorf("after the parent's end: %d live; want 0", live)
	}
	if d.Err() == nil {
		t.Errorf("the cancelled derived context: Err nil")
	}
}
