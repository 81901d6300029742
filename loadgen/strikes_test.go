package loadgen

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockbench/lockbench/loadgen/store"
)

// countStore is a store whose only ability is its unsafe count, set by the
// test: the strike log's logic is ours, the store's judging is not tested
// here.
type countStore struct {
	store.Store
	dups atomic.Int64
}

func (c *countStore) Counts(context.Context) (store.Counts, error) {
	return store.Counts{Duplicates: c.dups.Load()}, nil
}

// A strike is unsafe when the store's unsafe count rose between its Begin
// and the grace after its End, the next strike's Begin, or the run's end.
func TestStrikeLog(t *testing.T) {
	st := &countStore{}
	var l strikeLog
	l.watch(st, 50*time.Millisecond)

	// 1: a duplicate inside the strike: unsafe.
	l.begin("strike")
	st.dups.Add(1)
	l.end(time.Now().UnixNano(), false, nil)
	time.Sleep(100 * time.Millisecond)
	// A duplicate after the grace belongs to no strike.
	st.dups.Add(1)

	// 2: nothing happens, and its aim missed: safe, missed, closed by
	// its grace.
	l.begin("strike")
	l.end(time.Now().UnixNano(), true, &strikeAim{payment: 7})
	time.Sleep(100 * time.Millisecond)

	// 3: a duplicate within the grace after the end: unsafe.
	l.begin("strike")
	l.end(time.Now().UnixNano(), false, nil)
	st.dups.Add(1)
	time.Sleep(100 * time.Millisecond)

	// 4: ended, closed early by the next Begin before the grace: safe;
	// 5: a duplicate, then the run ends inside the grace: unsafe, and
	// so landed though its aim was judged missed.
	l.begin("strike")
	l.end(time.Now().UnixNano(), false, nil)
	l.begin("strike")
	st.dups.Add(1)
	l.end(time.Now().UnixNano(), true, &strikeAim{payment: 9})
	strikes, unsafe, missed := l.finish(store.Counts{Duplicates: st.dups.Load()}, nil)
	if strikes != 5 || unsafe != 3 || missed != 1 {
		t.Errorf("strikes %d, unsafe %d, missed %d; want 5 strikes, 3 unsafe, 1 missed", strikes, unsafe, missed)
	}
	// Marks after the run's end change nothing.
	l.begin("strike")
	if s, u, m := l.finish(store.Counts{}, nil); s != 5 || u != 3 || m != 1 {
		t.Errorf("after finish: strikes %d, unsafe %d, missed %d; want 5, 3, 1", s, u, m)
	}
}
